package main

import (
	"context"
	"errors"
	"os"
	"strconv"
	"time"

	"golang.org/x/net/http2"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/supervisor-dev/supervisor/internal/hostile"
	pb "github.com/supervisor-dev/supervisor/internal/inferencepb"
)

// The gRPC attacks play raw HTTP/2 (hostile.H2) against the gRPC
// listener. Their outcomes are hostile.Outcome's ("grpc CANCELLED", "rst
// REFUSED_STREAM", "goaway ENHANCE_YOUR_CALM"), or outcomeCut,
// outcomeHeld, outcomeRefused for the connection; "absorbed" is a burst
// of frames the server took in and answered an RPC after.
const outcomeAbsorbed = "absorbed"

var (
	inferMethod  = "/" + pb.GRPCInferenceService_ServiceDesc.ServiceName + "/ModelInfer"
	streamMethod = "/" + pb.GRPCInferenceService_ServiceDesc.ServiceName + "/ModelStreamInfer"
	liveMethod   = "/" + pb.GRPCInferenceService_ServiceDesc.ServiceName + "/ServerLive"
)

// grpcAttacks are the gRPC listener's rows of attackTable. Rapid reset
// comes from 127.0.0.1, the well-behaved gRPC client's address, whose
// connection must keep serving while the address is penalised
// (grpc.abuse_penalty); every other attack comes from a loopback address
// of its own, so that a penalty one attack earns does not refuse the
// next attack's connections and hide what that one costs.
func grpcAttacks() []attack {
	as := grpcAttackRows()
	for i := range as {
		if as[i].name != "grpc-rapid-reset" {
			as[i].grpcFrom = "127.0.0." + strconv.Itoa(10+i)
		}
	}
	return as
}

func grpcAttackRows() []attack {
	return []attack{
		allow(raw("grpc-rapid-reset", 4, "absorbed: at most max_concurrent_streams handlers per connection (grpc-go's CVE-2023-44487 fix); "+
			"cut after 200 early ends; goaway ENHANCE_YOUR_CALM at accept (grpc.abuse_penalty)", h2Repeat(rapidReset)), outcomeAbsorbed),
		// 24 x 136 streams: under grpc.max_rpcs (4096), beyond which every
		// RPC, the well-behaved client's too, is refused RESOURCE_EXHAUSTED.
		raw("grpc-stream-flood", 24, "grpc CANCELLED at body_timeout; rst REFUSED_STREAM beyond max_concurrent_streams", h2Repeat(streamFlood)),
		raw("grpc-huge-message", 32, "grpc RESOURCE_EXHAUSTED from the prefix (4 GiB), grpc CANCELLED at body_timeout (trickled)", h2Repeat(hugeMessage)),
		raw("grpc-ping-flood", 8, "goaway ENHANCE_YOUR_CALM (too_many_pings)", h2Repeat(pingFlood)),
		allow(raw("grpc-settings-flood", 8, "absorbed: acked at a bounded rate (grpc-go stops reading when 50 acks are unread)", h2Repeat(settingsFlood)), outcomeAbsorbed),
		raw("grpc-idle-connections", 2000, "held; goaway NO_ERROR at idle_timeout; goaway REFUSED_STREAM beyond grpc.max_connections", h2Repeat(idleH2)),
		raw("grpc-unread-unary", 8, "rst REFUSED_STREAM beyond max_concurrent_streams: a unary answer the client gives no window stays on its stream", h2Repeat(unreadUnary)),
		raw("grpc-unread-answers", 8, "cut at write_timeout: the stream's answers fill its window, the connection is closed", h2Repeat(unreadAnswers)),
		fullOnly(raw(grpcUnreadLargeName, 8, "grpc RESOURCE_EXHAUSTED past the body budget; cut at write_timeout: 4 MiB unary answers given no window", h2Repeat(unreadLarge))),
		fullOnly(raw("grpc-continuation-flood", 8, "goaway or cut at max_header_bytes: an endless header block is not read on", h2Repeat(continuationFlood))),
		fullOnly(allow(raw("grpc-hpack-bomb", 8, "rst or goaway at max_header_bytes; absorbed: the connection still serves", h2Repeat(hpackBomb)), outcomeAbsorbed)),
		fullOnly(allow(raw("grpc-window-update-flood", 8, "absorbed: each WINDOW_UPDATE costs a parse", h2Repeat(windowUpdateFlood)), outcomeAbsorbed)),
		fullOnly(allow(raw("grpc-priority-flood", 8, "absorbed: PRIORITY frames are ignored", h2Repeat(priorityFlood)), outcomeAbsorbed)),
		fullOnly(allow(raw("grpc-empty-data-flood", 8, "absorbed: empty DATA frames carry nothing to charge", h2Repeat(emptyDataFlood)), outcomeAbsorbed)),
		fullOnly(raw("grpc-metadata-flood", 24, "grpc CANCELLED at body_timeout; rst REFUSED_STREAM beyond max_concurrent_streams: 14 KiB of metadata a stream", h2Repeat(metadataFlood))),
		fullOnly(raw("grpc-decode-bomb", 2, "grpc INTERNAL before decoding (the codec refuses: packed contents that decode past max_body_bytes)", h2Repeat(decodeBomb))),
	}
}

// session is a raw HTTP/2 connection whose frames a goroutine reads,
// sending each outcome a frame carries (hostile.Outcome) on ends, and
// the error that ended the connection on done.
type session struct {
	*hostile.H2
	ends chan end
	done chan error
}

type end struct {
	stream uint32
	how    string
}

// h2Repeat plays one session after another until ctx ends, recording
// its outcomes; a connection that cannot be opened is outcomeRefused.
func h2Repeat(play func(ctx context.Context, t target, s *session, rec *answers)) func(context.Context, target, *answers) {
	return func(ctx context.Context, t target, rec *answers) {
		for ctx.Err() == nil {
			h, err := hostile.DialH2From(ctx, t.grpcFrom, t.grpcAddr)
			if err != nil {
				if ctx.Err() == nil {
					rec.add(outcomeRefused)
					time.Sleep(100 * time.Millisecond) // a refused dial returns at once
				}
				continue
			}
			s := &session{H2: h, ends: make(chan end, 1024), done: make(chan error, 1)}
			stop := context.AfterFunc(ctx, func() { _ = h.Conn.SetDeadline(time.Now()) })
			go s.read()
			play(ctx, t, s, rec)
			stop()
			_ = h.Close()
		}
	}
}

func (s *session) read() {
	for {
		f, err := s.Framer.ReadFrame()
		if err != nil {
			s.done <- err
			return
		}
		if id, how := hostile.Outcome(f); how != "" {
			s.ends <- end{id, how}
		}
	}
}

// lost is the outcome of a connection that ended: held when ctx did it.
func lost(ctx context.Context, err error) string {
	if ctx.Err() != nil || errors.Is(err, os.ErrDeadlineExceeded) {
		return outcomeHeld
	}
	return outcomeCut
}

// await waits for an outcome on stream 0 (a pong or a GOAWAY) and
// returns it, or the connection's end.
func (s *session) await(ctx context.Context) string {
	for {
		select {
		case e := <-s.ends:
			if e.stream == 0 {
				return e.how
			}
		case err := <-s.done:
			return lost(ctx, err)
		}
	}
}

// burst writes n frames (write(i)) then calls ServerLive, and records
// what came back: outcomeAbsorbed when the call is answered (the server
// took the burst in and still serves the connection), a GOAWAY, or the
// connection's end. It returns whether the connection is still usable.
// (A PING would do as a probe, but gRPC counts a PING with no stream
// open as abuse: three and it sends GOAWAY.)
func burst(ctx context.Context, t target, s *session, rec *answers, n int, write func(i int) error) bool {
	for i := range n {
		if err := write(i); err != nil {
			rec.add(lost(ctx, err))
			return false
		}
	}
	id, err := s.Open(t.grpcAddr, liveMethod, "x-api-key", apiKey)
	if err == nil {
		err = s.Framer.WriteData(id, true, hostile.MessagePrefix(0))
	}
	if err != nil {
		rec.add(lost(ctx, err))
		return false
	}
	live := &answers{n: map[string]int{}}
	ok := s.waitEnd(ctx, id, live, nil)
	for how := range live.counts() {
		if how == "grpc "+codes.OK.String() {
			how = outcomeAbsorbed
		}
		rec.add(how)
		ok = ok && how == outcomeAbsorbed
	}
	return ok
}

// rapidReset opens authorised ModelInfer streams and resets each at
// once (CVE-2023-44487), 1000 a burst, on one connection.
func rapidReset(ctx context.Context, t target, s *session, rec *answers) {
	for ctx.Err() == nil && burst(ctx, t, s, rec, 1000, func(int) error {
		id, err := s.Open(t.grpcAddr, inferMethod, "x-api-key", apiKey)
		if err != nil {
			return err
		}
		return s.Framer.WriteRSTStream(id, http2.ErrCodeCancel)
	}) {
	}
}

// streamFlood opens max_concurrent_streams + 8 authorised ModelInfer
// streams and sends none of their messages, then waits for every one to
// end.
func streamFlood(ctx context.Context, t target, s *session, rec *answers) {
	floodStreams(ctx, t, s, rec)
}

// floodStreams is streamFlood with the extra metadata md on every stream.
func floodStreams(ctx context.Context, t target, s *session, rec *answers, md ...string) {
	open := map[uint32]bool{}
	for range t.maxStreams + 8 {
		id, err := s.Open(t.grpcAddr, inferMethod, append([]string{"x-api-key", apiKey}, md...)...)
		if err != nil {
			rec.add(lost(ctx, err))
			return
		}
		open[id] = true
	}
	s.endAll(ctx, open, rec)
}

// endAll records the end of each stream in open as it comes, until all
// have ended or the connection does (the rest are its outcome).
func (s *session) endAll(ctx context.Context, open map[uint32]bool, rec *answers) {
	for len(open) > 0 {
		select {
		case e := <-s.ends:
			if open[e.stream] {
				delete(open, e.stream)
				rec.add(e.how)
			}
		case err := <-s.done:
			for range open {
				rec.add(lost(ctx, err))
			}
			return
		}
	}
}

// hugeMessage alternates two messages on one connection: one whose
// prefix claims 4 GiB - 1, and one that claims max_body_bytes - 1 and
// trickles 10 bytes every 500ms.
func hugeMessage(ctx context.Context, t target, s *session, rec *answers) {
	for ctx.Err() == nil {
		id, err := s.Open(t.grpcAddr, inferMethod, "x-api-key", apiKey)
		if err == nil {
			err = s.Framer.WriteData(id, false, hostile.MessagePrefix(1<<32-1))
		}
		if err != nil || !s.waitEnd(ctx, id, rec, nil) {
			return
		}
		id, err = s.Open(t.grpcAddr, inferMethod, "x-api-key", apiKey)
		if err == nil {
			err = s.Framer.WriteData(id, false, hostile.MessagePrefix(uint32(t.maxBody-1)))
		}
		if err != nil || !s.waitEnd(ctx, id, rec, func() error { return s.Framer.WriteData(id, false, []byte("0123456789")) }) {
			return
		}
	}
}

// waitEnd waits for stream id's end and records it, calling tick (when
// set) every 500ms meanwhile; it returns whether the connection lives.
func (s *session) waitEnd(ctx context.Context, id uint32, rec *answers, tick func() error) bool {
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case e := <-s.ends:
			if e.stream == id || e.stream == 0 && e.how != "pong" {
				rec.add(e.how)
				return e.stream == id
			}
		case err := <-s.done:
			rec.add(lost(ctx, err))
			return false
		case <-t.C:
			if tick != nil && tick() != nil {
				return true // the stream is over: its end is on its way
			}
		}
	}
}

// pingFlood sends PINGs back to back, with no stream open, until the
// server sends GOAWAY or closes (at most 10000 a connection).
func pingFlood(ctx context.Context, _ target, s *session, rec *answers) {
	for i := 0; i < 10000 && ctx.Err() == nil; i++ {
		if err := s.Framer.WritePing(false, [8]byte{byte(i)}); err != nil {
			break
		}
		select {
		case e := <-s.ends:
			if e.how != "pong" {
				rec.add(e.how)
				return
			}
		default:
		}
	}
	rec.add(s.awaitGoAway(ctx))
}

// awaitGoAway waits for a GOAWAY (skipping pongs) or the connection's end.
func (s *session) awaitGoAway(ctx context.Context) string {
	for {
		if how := s.await(ctx); how != "pong" {
			return how
		}
	}
}

// settingsFlood sends SETTINGS frames (each needs an ack), 1000 a burst.
func settingsFlood(ctx context.Context, t target, s *session, rec *answers) {
	for ctx.Err() == nil && burst(ctx, t, s, rec, 1000, func(int) error {
		return s.Framer.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 65535})
	}) {
	}
}

// idleH2 opens a connection (preface and SETTINGS) and sends nothing more.
func idleH2(ctx context.Context, _ target, s *session, rec *answers) {
	rec.add(s.awaitGoAway(ctx))
}

// unreadAnswers opens ModelStreamInfer with a stream window of 0 (the
// server may send it no DATA) and sends 512 KiB of MLP requests (within
// the server's 1 MiB stream window), then only reads frames, never
// opening the window: the
// answers fill the stream's write quota, the handler blocks in Send, and
// write_timeout should close the connection. Each request asks for 8
// rows, so that 64 KiB of answers (grpc-go's write quota) pile up after
// tens of requests rather than hundreds: under load, hundreds took most
// of a short phase before the write bound even started.
func unreadAnswers(ctx context.Context, t target, s *session, rec *answers) {
	if !s.noWindow(ctx, rec) {
		return
	}
	id, err := s.Open(t.grpcAddr, streamMethod, "x-api-key", apiKey)
	if err != nil {
		rec.add(lost(ctx, err))
		return
	}
	msg, _ := proto.Marshal(mlpRequest(8))
	frame := hostile.Message(msg)
	for sent := 0; sent < 512<<10; sent += len(frame) {
		if err := s.Framer.WriteData(id, false, frame); err != nil {
			rec.add(lost(ctx, err))
			return
		}
	}
	s.waitEnd(ctx, id, rec, nil)
}

// unreadUnary gives the server a stream window of 0, then calls
// ModelInfer over and over without waiting for the answers (which the
// window keeps from coming): each answer stays queued on the
// connection, and the question is whether anything bounds how many.
// It records how each stream ended: REFUSED_STREAM when the server
// counts the unanswered ones against max_concurrent_streams.
func unreadUnary(ctx context.Context, t target, s *session, rec *answers) {
	if !s.noWindow(ctx, rec) {
		return
	}
	msg, _ := proto.Marshal(legitInferRequest())
	frame := hostile.Message(msg)
	for i := 0; i < 10000 && ctx.Err() == nil; i++ {
		id, err := s.Open(t.grpcAddr, inferMethod, "x-api-key", apiKey)
		if err == nil {
			err = s.Framer.WriteData(id, true, frame)
		}
		if err != nil {
			rec.add(lost(ctx, err))
			return
		}
		s.drainEnds(rec)
	}
	<-ctx.Done()
	rec.add(outcomeHeld)
}

// drainEnds records the stream ends that have come, without waiting.
func (s *session) drainEnds(rec *answers) {
	for {
		select {
		case e := <-s.ends:
			if e.stream != 0 {
				rec.add(e.how)
			}
		default:
			return
		}
	}
}

// noWindow gives the server a stream window of 0 (it may send no DATA),
// then waits for a PING's answer, which comes after the server's
// SETTINGS and connection window: past it, the client may send up to
// them. It records a failure and returns false.
func (s *session) noWindow(ctx context.Context, rec *answers) bool {
	if err := s.Framer.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 0}); err != nil {
		rec.add(lost(ctx, err))
		return false
	}
	if err := s.Framer.WritePing(false, [8]byte{}); err != nil || s.await(ctx) != "pong" {
		rec.add(outcomeCut)
		return false
	}
	return true
}
