// Command hostile runs a real supervisor (the MLP model and, when the
// shared test data is there, the shared SqueezeNet from encoded images;
// API keys on) and attacks its public port while well-behaved clients
// measure what the attacks cost them: one sends MLP rows back to back,
// the other (with SqueezeNet) a real photo every 50ms, since image
// attacks compete with image work in the prep workers' decode gate. It
// prints one row per attack: the master's and the prep workers' peak RSS
// over their resting size, and how far over it each is once the attack
// ended (up to 10s later: memory a burst left behind), each well-behaved client's errors and p99
// against its steady p99, and the answers the attack got.
//
//	scripts/hostile                     # the full run (make hostile)
//	go run ./cmd/hostile -scale 0.1 -phase 3s -attacks slowloris,huge-content-length
//
// What it checks is issue 14's bound: under every attack the well-behaved
// client sees no error and a p99 within 3x its steady p99, and the
// master's RSS stays at or under rest + limits.max_body_bytes_in_flight.
// Every attack request must get a clear 4xx or 503, or be cut (or an
// answer the attack allows: png8-bomb is an image within max_pixels, so
// its right answer is 200, at a bounded cost).
//
// Attacks are entries of the table in attacks.go: a name, a client count
// at full scale, and a function that plays one hostile client until its
// context ends, recording each answer. A request body from a generator
// plugs in as one entry, for example
//
//	imageAttack(payload("jpeg-scan-bomb", 8, "400", func(target) post {
//		return post{model: imageModel, contentType: "image/jpeg", body: hostile.ScanBombJPEG(8000)}
//	}))
//
// imageAttack marks an attack that needs the image model: without the
// shared SqueezeNet (-testdata, default ../shared/testdata) it is skipped,
// with its reason in the table. The image attacks: a JPEG scan bomb
// (8000 scans), 16-bit and 8-bit 6000×6000 PNG bombs, and floods of empty
// BYTES elements sized just under max_body_bytes, in JSON and with the
// binary tensor extension.
//
// gzip-bomb sends a Content-Encoding: gzip body of about 200 KiB that
// inflates to a valid MLP request of twice max_body_bytes
// (hostile.GzipBomb): the prep worker stops inflating at max_body_bytes
// and answers 413; the master, which carried only the compressed bytes,
// holds no more than those.
//
// unread-answers (unread.go) runs in the full suite only (make hostile,
// -attacks), not in TestHostileBounded: gzip'd binary requests to the
// generated types model (served only when it is selected) for answers
// three times their inflated size, each left unread after its status
// line, so the master must charge held answers to its body budget and
// the prep worker must encode them in its decode gate's large lane.
//
// The gRPC listener has rows of its own (grpcattacks.go), played in raw
// HTTP/2 frames (hostile.H2) while a third well-behaved client sends the
// MLP row by ModelInfer on one connection: HTTP/2 rapid reset
// (CVE-2023-44487: 1000 streams opened and reset at once, then a
// ServerLive), a flood of max_concurrent_streams + 8 streams on each of 24 connections (under grpc.max_rpcs)
// that never send their message, messages whose prefix claims 4 GiB or
// max_body_bytes and then trickle, PING and SETTINGS floods (and, in
// grpcframes.go, WINDOW_UPDATE, PRIORITY and empty DATA floods, an
// endless CONTINUATION header block, an HPACK bomb, a stream flood
// whose streams carry 370 metadata fields each, and ModelInfer
// messages of int64 zeros that decode to 8 times their size: these
// rows are the full run's only, not TestHostileBounded's), 2000 idle
// connections (twice grpc.max_connections), and clients that give the
// server no window for answers: ModelInfer after ModelInfer, and one
// ModelStreamInfer. Their outcomes are
// how each stream or connection ended ("grpc Canceled", "rst
// REFUSED_STREAM", "goaway ENHANCE_YOUR_CALM", cut); "absorbed" is a
// burst after which the server still answered. Rapid reset comes from
// 127.0.0.1, the gRPC client's own address (which the server then
// penalises: grpc.abuse_penalty), every other gRPC attack from a
// loopback address of its own (127.0.0.10 and up), so that one attack's
// penalty does not refuse the next one's connections.
//
// grpc-unread-large (grpcunreadlarge.go, the full run's only: it needs
// the types model) gives the server no window either, and leaves 64
// unary answers of about 1 MiB a connection unread: the master must
// charge them to its body budget until written.
//
// The hang-up rows (hangup.go) attack the path that stops a run whose
// client has gone: 16 clients each send a run of about 5s to a slow
// model (onnxmodel.SlowSin, one instance, max_run_time 20s, served next
// to the MLP) and hang up after 50ms, by closing the HTTP connection
// (hangup-slow) or cancelling the ModelInfer RPC (grpc-cancel-slow),
// over and over. Only stopping those runs on the hang-up frees the
// model's instance and the prep worker's arena slots; a fourth
// well-behaved client sends the slow model's quick input (n 3) every
// 20ms with a 2s timeout, which a run not stopped (5s) would exceed. Each
// row also has the master's count of hung-up requests
// (supervisor_client_closed_requests_total over the attack; "-" for a
// binary without it).
//
// The suite shares the machine with the supervisor it measures: on a
// small or busy host the p99 ratios include CPU contention between the
// attackers and the server, not only what the server does.
package main
