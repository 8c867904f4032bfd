//go:build !cgo

package imageprep

// inflateZlib has no fast inflater without cgo: PNGs go to image/png.
func inflateZlib(dst, src []byte) error { return errNotFast }

// cgoEnabled says whether this build has the fast inflater.
const cgoEnabled = false
