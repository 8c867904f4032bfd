module github.com/supervisor-dev/supervisor

go 1.26.8

require (
	github.com/coreos/go-systemd/v22 v22.7.0
	github.com/rs/zerolog v1.35.1
	github.com/valyala/fasthttp v1.74.0
	github.com/yalue/onnxruntime_go v1.27.0
	google.golang.org/protobuf v1.36.12
	gopkg.in/yaml.v3 v3.0.1
)

require (
	github.com/klauspost/compress v1.20.0 // indirect
	github.com/mattn/go-colorable v0.1.14 // indirect
	github.com/mattn/go-isatty v0.0.20 // indirect
	github.com/molecule-man/go-brrr v1.0.1 // indirect
	github.com/valyala/bytebufferpool v1.0.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
)
