package main

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// attack is one row of the suite: conns hostile clients at full scale,
// each playing client until its context ends and recording every answer
// it got. A new attack is one more entry in attackTable.
type attack struct {
	name  string
	conns int
	// what the server should answer, for the table's reader
	expect string
	client func(ctx context.Context, addr string, rec *answers)
}

// attackTable is every attack, in the order they run.
func attackTable() []attack {
	return []attack{
		{"slowloris", 200, "408 or cut at read_timeout", repeat(slowloris)},
		{"slow-body", 100, "408 at body_timeout/body_min_rate", repeat(slowBody)},
		{"huge-content-length", 300, "503 over budget at once, 408 at body_timeout", repeat(hugeContentLength)},
		{"idle-connections", 10000, "held, cut at read_timeout; 503 beyond max_connections", repeat(idle)},
		{"header-flood", 32, "431", repeat(headerFlood)},
		{"no-api-key", 32, "401 at once", repeat(noAPIKey)},
		payload("garbage-json", 8, "application/json", garbageJSON),
	}
}

// repeat plays one request after another on fresh connections.
func repeat(one func(ctx context.Context, addr string) string) func(context.Context, string, *answers) {
	return func(ctx context.Context, addr string, rec *answers) {
		for ctx.Err() == nil {
			rec.add(one(ctx, addr))
		}
	}
}

// payload is an attack that POSTs a generated body, with the key, to the
// model's infer route over and over: the way body generators (decoder
// bombs, floods of BYTES elements) plug into the suite.
func payload(name string, conns int, contentType string, gen func() []byte) attack {
	return attack{name: name, conns: conns, expect: "4xx from the prep worker", client: func(ctx context.Context, addr string, rec *answers) {
		body := gen()
		head := fmt.Sprintf("POST /v2/models/mlp/infer HTTP/1.1\r\nHost: %s\r\nX-API-Key: %s\r\nContent-Type: %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n",
			addr, apiKey, contentType, len(body))
		req := append([]byte(head), body...)
		for ctx.Err() == nil {
			rec.add(exchange(ctx, addr, once(req), 0))
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
