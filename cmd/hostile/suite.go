package main

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// suiteOptions size a run.
type suiteOptions struct {
	server  serverOptions
	scale   float64       // attack clients = attack.conns * scale (at least 1)
	phase   time.Duration // how long the well-behaved client measures, steady and per attack
	rampUp  time.Duration // attack running before the measurement starts
	settle  time.Duration // how long to wait for the master's and prep's RSS to come back after an attack
	flood   int64         // BYTES flood body size; 0 = just under server.maxBody
	legit   int           // the well-behaved client's connections
	nice    int           // the attacker process's niceness
	attacks []attack
	// photo is the image client's request (a real JPEG) when
	// server.squeezeNet is set; noImages says why it is not, for the rows
	// of the image attacks it skips.
	photo    []byte
	noImages string
	logf     func(format string, args ...any)
}

// row is the outcome of one attack.
type row struct {
	attack      attack
	clients     int
	masterOver  int64 // peak master RSS over rest, bytes
	prepOver    int64 // peak prep worker RSS over rest, bytes
	masterAfter int64 // master RSS over rest once the attack ended and the budget emptied
	prepAfter   int64 // largest prep worker RSS over rest once the attack ended
	legit       legitResult
	p99Ratio    float64
	image       legitResult // the image client's, when the image model is served
	imageRatio  float64
	grpc        legitResult // the gRPC client's
	grpcRatio   float64
	quick       legitResult // the slow model's quick client's (newQuickClient)
	// clientClosed is how many requests the master counted as hung up
	// during the attack (supervisor_client_closed_requests_total); -1: the
	// binary has no such count.
	clientClosed int64
	answers      map[string]int
	alive        bool
	skipped      string // why the attack did not run; "" = it ran
}

// report is a whole run.
type report struct {
	steady      legitResult
	imageSteady legitResult // requests == 0: no image client
	grpcSteady  legitResult
	quickSteady legitResult
	masterRest  int64
	prepRest    int64
	budget      int64
	rows        []row
}

// runSuite starts the server, measures the steady state, then runs each
// attack while the well-behaved client measures again.
func runSuite(o suiteOptions) (*report, error) {
	srv, err := startServer(o.server)
	if err != nil {
		return nil, err
	}
	defer srv.stop()
	m, err := newMeasurer(srv, o)
	if err != nil {
		return nil, err
	}
	defer m.grpc.close()
	m.measure(time.Second) // opens the clients' connections, warms the batcher

	preps, err := srv.prepPIDs()
	if err != nil {
		return nil, err
	}
	s := samplePeaks(srv.PID(), preps, 50*time.Millisecond)
	rep := &report{budget: o.server.budget}
	steady := m.measure(o.phase)
	rep.steady, rep.imageSteady, rep.grpcSteady, rep.quickSteady = steady.mlp, steady.image, steady.grpc, steady.quick
	rep.masterRest, rep.prepRest = s.stop()
	o.logf("steady: %d requests, %d errors, p99 %v; image %d requests, %d errors, p99 %v; gRPC %d requests, %d errors, p99 %v; quick %d requests, %d errors, p99 %v; master %s, prep %s at rest",
		rep.steady.requests, rep.steady.errors, rep.steady.p99, rep.imageSteady.requests, rep.imageSteady.errors,
		rep.imageSteady.p99, rep.grpcSteady.requests, rep.grpcSteady.errors, rep.grpcSteady.p99,
		rep.quickSteady.requests, rep.quickSteady.errors, rep.quickSteady.p99, mib(rep.masterRest), mib(rep.prepRest))

	for _, a := range o.attacks {
		if a.image && o.server.squeezeNet == "" {
			rep.rows = append(rep.rows, row{attack: a, skipped: o.noImages, alive: true})
			o.logf("%s: skipped: %s", a.name, o.noImages)
			continue
		}
		r, err := runAttack(o, srv, m, a, rep)
		if err != nil {
			return rep, fmt.Errorf("%s: %w", a.name, err)
		}
		rep.rows = append(rep.rows, r)
		o.logf("%s: legit %d/%d errors, p99 %v (x%.1f); image %d/%d errors, p99 %v (x%.1f); gRPC %d/%d errors, p99 %v (x%.1f); quick %d/%d errors, p99 %v; master +%s, prep +%s; client-closed %d; answers %s",
			a.name, r.legit.errors, r.legit.requests, r.legit.p99, r.p99Ratio, r.image.errors, r.image.requests, r.image.p99, r.imageRatio,
			r.grpc.errors, r.grpc.requests, r.grpc.p99, r.grpcRatio, r.quick.errors, r.quick.requests, r.quick.p99,
			mib(r.masterOver), mib(r.prepOver), r.clientClosed, formatAnswers(r.answers))
		if !r.alive {
			return rep, fmt.Errorf("the master died during %s; its log is %s", a.name, srv.Log)
		}
	}
	return rep, nil
}

// measurer runs the well-behaved clients together: the MLP one over
// HTTP, the MLP one over gRPC, the slow model's quick one, and the image
// one when the image model is served.
type measurer struct {
	mlp, image, quick *legitClient
	grpc              *grpcLegit
}

// measured is what the well-behaved clients saw in one phase; image is
// zero without an image client.
type measured struct {
	mlp, image, grpc, quick legitResult
}

func newMeasurer(srv *server, o suiteOptions) (*measurer, error) {
	g, err := newGRPCLegit(srv.grpcAddr(), o.legit)
	if err != nil {
		return nil, err
	}
	m := &measurer{mlp: newLegitClient(srv.Addr, o.legit), grpc: g, quick: newQuickClient(srv.Addr)}
	if o.server.squeezeNet != "" {
		m.image = newImageClient(srv.Addr, o.photo)
	}
	return m, nil
}

// measure runs the clients together for d.
func (m *measurer) measure(d time.Duration) measured {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var out measured
	var wg sync.WaitGroup
	runInto := func(res *legitResult, run func(context.Context) legitResult) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			*res = run(ctx)
		}()
	}
	if m.image != nil {
		runInto(&out.image, m.image.run)
	}
	runInto(&out.grpc, m.grpc.run)
	runInto(&out.quick, m.quick.run)
	out.mlp = m.mlp.run(ctx)
	wg.Wait()
	return out
}

// floodBytes is the size of the BYTES flood bodies.
func (o suiteOptions) floodBytes() int64 {
	if o.flood > 0 {
		return o.flood
	}
	return o.server.maxBody
}

func runAttack(o suiteOptions, srv *server, m *measurer, a attack, rep *report) (row, error) {
	preps, err := srv.prepPIDs()
	if err != nil {
		return row{}, err
	}
	r := row{attack: a, clients: max(1, int(float64(a.conns)*o.scale))}
	closedBefore, err := clientClosed(srv.MetricsAddr)
	if err != nil {
		return row{}, err
	}
	s := samplePeaks(srv.PID(), preps, 50*time.Millisecond)
	attacker, err := startAttacker(a, r.clients, target{addr: srv.Addr, grpcAddr: srv.grpcAddr(), floodBytes: o.floodBytes(),
		maxBody: o.server.maxBody, maxStreams: grpcMaxStreams}, o.nice)
	if err != nil {
		s.stop()
		return row{}, err
	}
	time.Sleep(o.rampUp)
	got := m.measure(o.phase)
	r.legit, r.image, r.grpc, r.quick = got.mlp, got.image, got.grpc, got.quick
	counts, err := attacker.stop(30 * time.Second)
	master, prep := s.stop()
	if err != nil {
		return row{}, err
	}
	if r.clientClosed, err = closedSince(srv.MetricsAddr, closedBefore); err != nil {
		return row{}, err
	}
	r.masterOver, r.prepOver = max(0, master-rep.masterRest), max(0, prep-rep.prepRest)
	r.answers = counts
	r.alive = srv.Alive()
	r.p99Ratio = ratio(r.legit.p99, rep.steady.p99)
	r.imageRatio = ratio(r.image.p99, rep.imageSteady.p99)
	r.grpcRatio = ratio(r.grpc.p99, rep.grpcSteady.p99)
	r.masterAfter = settle(func() int64 { return rssOf(srv.PID()) }, rep.masterRest, o.settle)
	r.prepAfter = settle(func() int64 { return largestRSS(preps) }, rep.prepRest, o.settle)
	return r, nil
}

// settle waits up to timeout for rss (the master's, or the largest prep
// worker's) to come back to within 16 MiB of rest and returns how far
// over rest it is then: memory a burst left behind shows here.
func settle(rss func() int64, rest int64, timeout time.Duration) int64 {
	deadline := time.Now().Add(timeout)
	for {
		over := rss() - rest
		if over <= 16<<20 || time.Now().After(deadline) {
			return max(0, over)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// closedSince is how many more requests the master has counted as hung
// up than before; -1 where the binary counts none.
func closedSince(metricsAddr string, before int64) (int64, error) {
	now, err := clientClosed(metricsAddr)
	if err != nil || now < 0 || before < 0 {
		return -1, err
	}
	return now - before, nil
}

func mib(b int64) string { return fmt.Sprintf("%.1fMiB", float64(b)/(1<<20)) }

// ratio is p99 over steady, 0 without a steady figure.
func ratio(p99, steady time.Duration) float64 {
	if steady <= 0 {
		return 0
	}
	return float64(p99) / float64(steady)
}
