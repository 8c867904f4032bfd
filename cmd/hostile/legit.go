package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"
)

// legitBody is one MLP row: the request the well-behaved client repeats.
var legitBody = []byte(`{"inputs":[{"name":"x","datatype":"FP32","shape":[1,16],"data":[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15]}]}`)

// legitResult is what the well-behaved client saw during one phase.
type legitResult struct {
	requests int
	errors   int
	firstErr string
	p99      time.Duration
}

// legitClient is a well-behaved client: conns keep-alive connections,
// each sending the same inference request, with the key, back to back or
// one every pace. Its connections are opened once and reused across
// phases, as a client's pool would be.
type legitClient struct {
	url, contentType string
	body             []byte
	conns            int
	pace             time.Duration // least time from one request's start to the next's on a connection
	http             *http.Client
}

// newLegitClient measures the MLP: one row, back to back.
func newLegitClient(addr string, conns int) *legitClient {
	return newClient(addr, "mlp", "application/json", legitBody, conns, 0)
}

// imagePace paces the image client: a photo costs a prep worker a decode
// and the infer worker a SqueezeNet run, so back to back it would be a
// load of its own on a small host rather than a probe.
const imagePace = 50 * time.Millisecond

// newImageClient measures the image model: a real photo as a raw body,
// on one connection, one every imagePace. It shares the prep workers'
// decode gate with the image attacks.
func newImageClient(addr string, photo []byte) *legitClient {
	return newClient(addr, imageModel, "image/jpeg", photo, 1, imagePace)
}

func newClient(addr, model, contentType string, body []byte, conns int, pace time.Duration) *legitClient {
	// DisableCompression: no Accept-Encoding, so the server does not
	// compress the answers and the steady state stays what earlier runs
	// measured (response compression has its own benchmark, worker/prep).
	tr := &http.Transport{MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns, IdleConnTimeout: time.Hour, DisableCompression: true}
	return &legitClient{url: "http://" + addr + "/v2/models/" + model + "/infer", contentType: contentType,
		body: body, conns: conns, pace: pace, http: &http.Client{Transport: tr, Timeout: 30 * time.Second}}
}

// run sends requests until ctx ends and reports them.
func (c *legitClient) run(ctx context.Context) legitResult {
	return loop(ctx, c.conns, c.pace, c.once)
}

// loop runs once back to back (at least pace apart) on conns goroutines
// until ctx ends and reports the requests, errors and p99: the
// measurement every well-behaved client shares.
func loop(ctx context.Context, conns int, pace time.Duration, once func() error) legitResult {
	var mu sync.Mutex
	var lat []time.Duration
	var res legitResult
	var wg sync.WaitGroup
	for range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				start := time.Now()
				err := once()
				took := time.Since(start)
				if ctx.Err() != nil && err != nil {
					return // cut by the end of the phase, not by the server
				}
				mu.Lock()
				res.requests++
				if err != nil {
					res.errors++
					if res.firstErr == "" {
						res.firstErr = err.Error()
					}
				} else {
					lat = append(lat, took)
				}
				mu.Unlock()
				if wait := pace - took; wait > 0 {
					select {
					case <-ctx.Done():
					case <-time.After(wait):
					}
				}
			}
		}()
	}
	wg.Wait()
	res.p99 = percentile(lat, 0.99)
	return res
}

func (c *legitClient) once() error {
	req, err := http.NewRequest(http.MethodPost, c.url, bytes.NewReader(c.body))
	if err != nil {
		return err
	}
	req.Header.Set("X-API-Key", apiKey)
	req.Header.Set("Content-Type", c.contentType)
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%d %.200s", resp.StatusCode, body)
	}
	return nil
}

func percentile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	return d[min(len(d)-1, int(float64(len(d))*q))]
}
