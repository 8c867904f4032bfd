package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/supervisor-dev/supervisor/internal/hostile"
)

// attack is one row of the suite: conns hostile clients at full scale,
// each playing client until its context ends and recording every answer
// it got. A new attack is one more entry in attackTable; a request body
// from a generator plugs in as one entry, for example
//
//	imageAttack(payload("jpeg-scan-bomb", 8, "400", func(target) post {
//		return post{model: imageModel, contentType: "image/jpeg", body: hostile.ScanBombJPEG(8000)}
//	}))
type attack struct {
	name  string
	conns int
	// what the server should answer, for the table's reader
	expect string
	client func(ctx context.Context, t target, rec *answers)
	// image: the attack needs the image model (imageModel); without the
	// shared SqueezeNet the suite skips it.
	image bool
	// allowed are answers that are right for this attack besides a 4xx, a
	// 503 or a cut: "200" for a costly image that is within the limits.
	allowed []string
	// grpcFrom is the local IP the attack's gRPC connections come from
	// ("": 127.0.0.1, the well-behaved clients' own).
	grpcFrom string
	// fullOnly: only the full run (scripts/hostile) plays it, not
	// TestHostileBounded, whose time is spent.
	fullOnly bool
}

// target is what an attack client knows of the server under attack.
type target struct {
	addr       string
	grpcAddr   string // the gRPC listener
	grpcFrom   string // the local IP to dial it from ("": any)
	maxStreams int    // its grpc.max_concurrent_streams
	floodBytes int64  // how large the BYTES floods are: just under max_body_bytes at full scale
	maxBody    int64  // the server's max_body_bytes
}

// The image model the image attacks and the second well-behaved client
// use (suiteConfig serves it when the shared SqueezeNet is there), and
// its input.
const (
	imageModel = "squeezenet"
	imageInput = "data_0"
)

// attackTable is every attack, in the order they run: the HTTP ones,
// the gRPC listener's (grpcAttacks), the clients that hang up on slow
// runs (hangUpAttacks), then png8-bomb, the last of httpAttacks, which
// must stay last (see there).
func attackTable() []attack {
	http := httpAttacks()
	last := len(http) - 1
	return append(append(append(http[:last:last], grpcAttacks()...), hangUpAttacks()...), http[last])
}

// httpAttacks are the public listener's rows.
func httpAttacks() []attack {
	return []attack{
		raw("slowloris", 200, "408 or cut at read_timeout", repeat(slowloris)),
		raw("slow-body", 100, "408 at body_timeout/body_min_rate", repeat(slowBody)),
		raw("huge-content-length", 300, "503 over budget at once, 408 at body_timeout", repeat(hugeContentLength)),
		raw("idle-connections", 10000, "held, cut at read_timeout; 503 beyond max_connections", repeat(idle)),
		raw("header-flood", 32, "431", repeat(headerFlood)),
		raw("no-api-key", 32, "401 at once", repeat(noAPIKey)),
		payload("garbage-json", 8, "400 from the prep worker", func(target) post {
			return post{model: "mlp", contentType: "application/json", body: garbageJSON()}
		}),
		payload("gzip-bomb", 8, "413 from the prep worker, having inflated no more than max_body_bytes", func(t target) post {
			return post{model: "mlp", contentType: "application/json", header: "Content-Encoding: gzip\r\n",
				body: hostile.GzipBomb(legitBody, int(2*t.maxBody))}
		}),
		imageAttack(payload("jpeg-scan-bomb", 8, "400 too costly, from the header, before any decoding", func(target) post {
			return post{model: imageModel, contentType: "image/jpeg", body: hostile.ScanBombJPEG(8000)}
		})),
		imageAttack(payload("png16-bomb", 8, "400 too costly (16-bit 6000x6000: 288 MB decoded), from the header", func(target) post {
			return post{model: imageModel, contentType: "image/png", body: hostile.PNGBomb(6000, 6000)}
		})),
		imageAttack(payload("bytes-flood-json", 4, "400 more than max_images, from the shape", func(t target) post {
			return post{model: imageModel, contentType: "application/json", body: hostile.BytesFloodJSON(imageInput, floodElems(t.floodBytes, 3))}
		})),
		imageAttack(payload("bytes-flood-binary", 4, "400 more than max_images, from the shape", func(t target) post {
			body, hl := hostile.BytesFloodBinary(imageInput, floodElems(t.floodBytes, 4))
			return post{model: imageModel, contentType: "application/octet-stream",
				header: fmt.Sprintf("Inference-Header-Content-Length: %d\r\n", hl), body: body}
		})),
		// Last: the heap an allowed decode leaves in the prep worker
		// would count in the peaks of the attacks after it.
		allow(imageAttack(payload("png8-bomb", 4, "200: allowed (36 Mpx < max_pixels), 144 MB a decode, bounded by the decode gate", func(target) post {
			return post{model: imageModel, contentType: "image/png", body: hostile.PNGBomb8(6000, 6000)}
		})), "200"),
	}
}

// floodElems is how many BYTES elements of size bytes each make a flood
// body just under total bytes (room left for the JSON around them).
func floodElems(total int64, size int) int { return int(max(total-256, 0) / int64(size)) }

// raw is an attack whose client writes its requests itself.
func raw(name string, conns int, expect string, client func(context.Context, target, *answers)) attack {
	return attack{name: name, conns: conns, expect: expect, client: client}
}

func imageAttack(a attack) attack { a.image = true; return a }

func allow(a attack, answers ...string) attack { a.allowed = answers; return a }

func fullOnly(a attack) attack { a.fullOnly = true; return a }

// repeat plays one request after another on fresh connections.
func repeat(one func(ctx context.Context, addr string) string) func(context.Context, target, *answers) {
	return func(ctx context.Context, t target, rec *answers) {
		for ctx.Err() == nil {
			rec.add(one(ctx, t.addr))
		}
	}
}

// post is one generated request body and where it goes.
type post struct {
	model, contentType string
	header             string // more header lines, each ending in \r\n
	body               []byte
}

// payload is an attack that POSTs a generated body, with the key, to a
// model's infer route over and over: the way body generators (decoder
// bombs, floods of BYTES elements) plug into the suite. The body is built
// once per attacker process and shared by its clients (a flood is as
// large as max_body_bytes).
func payload(name string, conns int, expect string, gen func(target) post) attack {
	var once1 sync.Once
	var req []byte
	build := func(t target) []byte {
		once1.Do(func() {
			p := gen(t)
			head := fmt.Sprintf("POST /v2/models/%s/infer HTTP/1.1\r\nHost: %s\r\nX-API-Key: %s\r\nContent-Type: %s\r\n%sContent-Length: %d\r\nConnection: close\r\n\r\n",
				p.model, t.addr, apiKey, p.contentType, p.header, len(p.body))
			req = append([]byte(head), p.body...)
		})
		return req
	}
	return attack{name: name, conns: conns, expect: expect, client: func(ctx context.Context, t target, rec *answers) {
		req := build(t)
		for ctx.Err() == nil {
			rec.add(exchange(ctx, t.addr, once(req), 0))
		}
	}}
}

const inferHead = "POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\n"

// slowloris sends a header one short line every 500ms, never ending it.
func slowloris(ctx context.Context, addr string) string {
	return exchange(ctx, addr, func(i int) []byte {
		if i == 0 {
			return []byte(inferHead)
		}
		return []byte(fmt.Sprintf("X-Slow-%d: x\r\n", i))
	}, 500*time.Millisecond)
}

// slowBody sends a complete, authorised header declaring 64 KiB, then
// the body at 20 bytes a second.
func slowBody(ctx context.Context, addr string) string {
	return exchange(ctx, addr, func(i int) []byte {
		if i == 0 {
			return []byte(inferHead + "X-API-Key: " + apiKey + "\r\nContent-Length: 65536\r\n\r\n")
		}
		return []byte("0123456789")
	}, 500*time.Millisecond)
}

// hugeContentLength is the case of issue 14: an authorised header
// declaring 64 MiB, one body byte, then nothing.
func hugeContentLength(ctx context.Context, addr string) string {
	return exchange(ctx, addr, once([]byte(inferHead+"X-API-Key: "+apiKey+"\r\nContent-Length: 67108864\r\n\r\n{")), 0)
}

// idle opens a connection and sends nothing.
func idle(ctx context.Context, addr string) string {
	return exchange(ctx, addr, func(int) []byte { return nil }, 0)
}

// headerFlood alternates a header of one 64 KiB field and one of 4000
// small fields, both over max_header_bytes.
var (
	hugeField   = []byte("GET /v2/models/mlp HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 64<<10) + "\r\n\r\n")
	manyFields  = []byte("GET /v2/models/mlp HTTP/1.1\r\nHost: x\r\n" + strings.Repeat("X-F: 1\r\n", 4000) + "\r\n")
	floodToggle = [2][]byte{hugeField, manyFields}
)

func headerFlood(ctx context.Context, addr string) string {
	return exchange(ctx, addr, once(floodToggle[time.Now().UnixNano()%2]), 0)
}

// noAPIKey declares a 64 MiB body without a key and sends none of it.
func noAPIKey(ctx context.Context, addr string) string {
	return exchange(ctx, addr, once([]byte(inferHead+"Content-Length: 67108864\r\n\r\n")), 0)
}

// garbageJSON is 1 MiB that is not JSON.
func garbageJSON() []byte {
	return []byte(`{"inputs":[` + strings.Repeat("[", 1<<20))
}
