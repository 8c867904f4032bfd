package main

import (
	"context"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/supervisor-dev/supervisor/internal/hostile"
)

// unread-answers asks for answers several times larger than its requests
// and never reads them. The model is answerModel (the generated types
// model: no batching, so any number of rows): 4 INT64 and 4 BOOL a row,
// 36 bytes in binary, come back as about 108 bytes of JSON, and the
// request is gzip'd binary, a few hundred KiB on the wire for
// max_body_bytes inflated. Each client reads only its answer's status
// line, then holds the connection unread until the phase ends (the
// master's write_timeout cuts it first): the master charges each answer
// to its body budget until it is written, so past the budget the answer
// is 503, and its RSS stays within rest + budget. The full suite only
// (make hostile, -attacks): not in TestHostileBounded.

// answerModel is the model unread-answers asks; the suite serves it only
// when the attack is selected (serverOptions.answerModel).
const answerModel = "types"

const unreadAnswersName = "unread-answers"

// fullOnlyAttacks are the attacks of the full suite that
// TestHostileBounded does not run.
func fullOnlyAttacks() []attack {
	return []attack{allow(raw(unreadAnswersName, 8,
		"200 charged to the body budget and held until write_timeout; 503 past the budget", httpUnreadAnswers), "200")}
}

// fullAttacks is every attack the command knows, in the order they run:
// attackTable with fullOnlyAttacks before its last row (png8-bomb stays
// last).
func fullAttacks() []attack {
	all := attackTable()
	last := len(all) - 1
	return append(append(all[:last:last], fullOnlyAttacks()...), all[last])
}

var (
	unreadOnce sync.Once
	unreadReq  []byte
)

// unreadRequest is the attack's request, built once per attacker
// process: hostile.AnswerBomb inflating to just under floodBytes.
func unreadRequest(t target) []byte {
	unreadOnce.Do(func() {
		hdr, z := hostile.AnswerBomb(t.floodBytes)
		unreadReq = append([]byte(fmt.Sprintf("POST /v2/models/%s/infer HTTP/1.1\r\nHost: %s\r\nX-API-Key: %s\r\n"+
			"Content-Type: application/octet-stream\r\nContent-Encoding: gzip\r\nInference-Header-Content-Length: %d\r\nContent-Length: %d\r\n\r\n",
			answerModel, t.addr, apiKey, len(hdr), len(z))), z...)
	})
	return unreadReq
}

// httpUnreadAnswers plays one client: a request on a fresh connection with a
// small receive buffer, its answer's status line read, the rest left
// unread until the phase ends or the server closes.
func httpUnreadAnswers(ctx context.Context, t target, rec *answers) {
	req := unreadRequest(t)
	for ctx.Err() == nil {
		rec.add(unreadOne(ctx, t.addr, req))
	}
}

func unreadOne(ctx context.Context, addr string, req []byte) string {
	conn, failed := dial(ctx, addr)
	if conn == nil {
		return failed
	}
	defer conn.Close()
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetReadBuffer(4 << 10)
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Now()) })
	defer stop()
	if _, err := conn.Write(req); err != nil {
		return outcomeCut
	}
	status := readStatus(ctx, conn) // and at most 4 KiB of the answer
	if status == "200" {
		<-ctx.Done() // the answer stays unread
	}
	return status
}
