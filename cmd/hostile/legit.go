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

// legitClient is the well-behaved client: conns keep-alive connections,
// each sending the same inference request back to back, with the key.
// Its connections are opened once and reused across phases, as a
// client's pool would be.
type legitClient struct {
	url   string
	conns int
	http  *http.Client
}

func newLegitClient(addr string, conns int) *legitClient {
	tr := &http.Transport{MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns, IdleConnTimeout: time.Hour}
	return &legitClient{url: "http://" + addr + "/v2/models/mlp/infer", conns: conns,
		http: &http.Client{Transport: tr, Timeout: 30 * time.Second}}
}

// run sends requests until ctx ends and reports them.
func (c *legitClient) run(ctx context.Context) legitResult {
	var mu sync.Mutex
	var lat []time.Duration
	var res legitResult
	var wg sync.WaitGroup
	for range c.conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				start := time.Now()
				err := c.once()
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
			}
		}()
	}
	wg.Wait()
	res.p99 = percentile(lat, 0.99)
	return res
}

func (c *legitClient) once() error {
	req, err := http.NewRequest(http.MethodPost, c.url, bytes.NewReader(legitBody))
	if err != nil {
		return err
	}
	req.Header.Set("X-API-Key", apiKey)
	req.Header.Set("Content-Type", "application/json")
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
