//go:build !(linux && (amd64 || arm64))

package ort

// KeepGoSignalHandlers does nothing on this platform: the CUDA execution
// provider is only supported on linux/amd64 and linux/arm64 here.
func KeepGoSignalHandlers() (restore func()) { return func() {} }
