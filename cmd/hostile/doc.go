// Command hostile runs a real supervisor (the MLP model, API keys on) and
// attacks its public port while a well-behaved client measures what the
// attacks cost it. It prints one row per attack: the master's and the
// prep workers' peak RSS over their resting size, the well-behaved
// client's errors and p99 against its steady p99, and the answers the
// attack got.
//
//	scripts/hostile                     # the full run (make hostile)
//	go run ./cmd/hostile -scale 0.1 -phase 3s -attacks slowloris,huge-content-length
//
// What it checks is issue 14's bound: under every attack the well-behaved
// client sees no error and a p99 within 3x its steady p99, and the
// master's RSS stays at or under rest + limits.max_body_bytes_in_flight.
// Every attack request must get a clear 4xx or 503, or be cut.
//
// Attacks are entries of the table in attacks.go: a name, a client count
// at full scale, and a function that plays one hostile client until its
// context ends, recording each answer. A request body from a generator
// plugs in as one entry, for example
//
//	payload("jpeg-scan-bomb", 8, "image/jpeg", func() []byte { return hostile.ScanBombJPEG(10000) })
//
// (image payloads need an image model in the suite's config; see
// suiteConfig).
//
// The suite shares the machine with the supervisor it measures: on a
// small or busy host the p99 ratios include CPU contention between the
// attackers and the server, not only what the server does.
package main
