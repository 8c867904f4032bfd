package sysshm

import (
	"bytes"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// TestMentionsAgreesWithContains: Mentions answers as bytes.Contains of
// the quoted key does, on headers with the key anywhere (first, last,
// split by a quote), with sparse and dense quotes.
func TestMentionsAgreesWithContains(t *testing.T) {
	key := `"` + ParamRegion + `"`
	r := rand.New(rand.NewPCG(3, 5))
	alphabet := []string{`"`, `"`, "1", ",", "a", "_", `"shared_memory`, `_region"`, key, "0.5"}
	cases := []string{"", `"`, key, key[:len(key)-1], `x` + key, strings.Repeat(`"`, 500) + key, strings.Repeat(`"a",`, 300) + key}
	for range 3000 {
		var b strings.Builder
		for range r.IntN(400) {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		cases = append(cases, b.String())
	}
	for _, c := range cases {
		if got, want := Mentions([]byte(c)), strings.Contains(c, key); got != want {
			t.Fatalf("Mentions(%q) = %v, want %v", c, got, want)
		}
	}
}

// BenchmarkMentions: the default model's JSON request (150,528 FP32
// numbers), which names no region, and the same count of BYTES strings.
func BenchmarkMentions(b *testing.B) {
	for _, tc := range []struct{ name, elem string }{{"numbers", "0.123456"}, {"strings", `"ab"`}} {
		var buf bytes.Buffer
		buf.WriteString(`{"inputs":[{"name":"x","shape":[1,3,224,224],"datatype":"FP32","data":[`)
		for i := range 150528 {
			if i > 0 {
				buf.WriteByte(',')
			}
			buf.WriteString(tc.elem)
		}
		buf.WriteString(`]}],"outputs":[{"name":"y","parameters":{"n":` + strconv.Itoa(1) + `}}]}`)
		body := buf.Bytes()
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if Mentions(body) {
					b.Fatal("names no region")
				}
			}
		})
	}
}
