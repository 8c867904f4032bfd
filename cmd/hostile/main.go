package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/supervisor-dev/supervisor/internal/ort"
)

func main() {
	if os.Getenv(roleEnv) == "attacker" {
		os.Exit(attackerMain())
	}
	os.Exit(run())
}

func run() int {
	so := serverFlags()
	scale := flag.Float64("scale", 1, "attack clients = each attack's full count times this")
	phase := flag.Duration("phase", 15*time.Second, "how long the well-behaved client measures, steady and under each attack")
	rampUp := flag.Duration("ramp-up", 3*time.Second, "how long an attack runs before the measurement starts")
	testdata := flag.String("testdata", "../shared/testdata", "the shared test data (SqueezeNet and photos, for the image attacks); absent = they are skipped")
	legit := flag.Int("legit", 4, "the well-behaved client's connections")
	only := flag.String("attacks", "", "comma-separated attack names (default: all)")
	nice := flag.Int("nice", 19, "niceness of the attacker process (0 = the suite's own priority)")
	flag.Parse()

	lib, err := ort.FindLibrary()
	if err != nil {
		fmt.Fprintln(os.Stderr, "hostile: ONNX Runtime library not found (run `make setup` or set ORT_LIBRARY):", err)
		return 2
	}
	attacks, err := selectAttacks(*only)
	if err != nil {
		fmt.Fprintln(os.Stderr, "hostile:", err)
		return 2
	}
	models, err := os.MkdirTemp("", "hostile-models")
	if err != nil {
		fmt.Fprintln(os.Stderr, "hostile:", err)
		return 1
	}
	defer os.RemoveAll(models)
	if err := writeModels(models); err != nil {
		fmt.Fprintln(os.Stderr, "hostile: generate models:", err)
		return 1
	}
	so.ortLib, so.modelsDir = lib, models
	for _, a := range attacks {
		so.answerModel = so.answerModel || a.name == unreadAnswersName || a.name == grpcUnreadLargeName
	}
	o := suiteOptions{
		server: *so,
		scale:  *scale, phase: *phase, rampUp: *rampUp, settle: 10 * time.Second, legit: *legit, nice: *nice, attacks: attacks,
		logf: func(f string, a ...any) { fmt.Fprintf(os.Stderr, "hostile: "+f+"\n", a...) },
	}
	o.server.squeezeNet, o.photo, o.noImages = findImageModel(*testdata)
	if o.noImages != "" {
		o.logf("the image attacks are skipped: %s", o.noImages)
	}
	rep, err := runSuite(o)
	if rep != nil {
		printReport(os.Stdout, rep)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "hostile:", err)
		return 1
	}
	if misses := rep.misses(); len(misses) > 0 {
		fmt.Fprintln(os.Stderr, "hostile: targets missed:\n  "+strings.Join(misses, "\n  "))
		return 1
	}
	return 0
}

// serverFlags registers the flags of the server under attack; its
// ortLib and modelsDir are left to the caller.
func serverFlags() *serverOptions {
	o := &serverOptions{}
	flag.StringVar(&o.bin, "bin", "bin/supervisor", "supervisor binary to attack")
	flag.Int64Var(&o.budget, "budget", 256<<20, "limits.max_body_bytes_in_flight, bytes")
	flag.Int64Var(&o.maxBody, "max-body", 64<<20, "max_body_bytes (the BYTES floods are sized just under it)")
	flag.DurationVar(&o.bodyTimeout, "body-timeout", 5*time.Second, "limits.body_timeout")
	flag.DurationVar(&o.readTimeout, "read-timeout", 10*time.Second, "limits.read_timeout")
	flag.DurationVar(&o.writeTimeout, "write-timeout", 10*time.Second, "limits.write_timeout (bounds a gRPC stream whose client takes no answer)")
	flag.IntVar(&o.grpcMaxConns, "grpc-max-connections", 1000, "grpc.max_connections (grpc-idle-connections opens 2000 at scale 1)")
	flag.IntVar(&o.prepWorkers, "prep", 1, "prep workers")
	return o
}

func selectAttacks(names string) ([]attack, error) {
	all := fullAttacks()
	if names == "" {
		return all, nil
	}
	var out []attack
	for _, n := range strings.Split(names, ",") {
		found := false
		for _, a := range all {
			if a.name == n {
				out, found = append(out, a), true
			}
		}
		if !found {
			var known []string
			for _, a := range all {
				known = append(known, a.name)
			}
			return nil, fmt.Errorf("no attack %q (known: %s)", n, strings.Join(known, ", "))
		}
	}
	return out, nil
}

// misses lists the targets a run missed: legit errors, p99 over 3x
// steady (for the slow model's quick client, an answer over quickTimeout
// is an error), master RSS over rest + budget, unclear attack answers, a dead master.
func (r *report) misses() []string {
	var out []string
	for _, row := range r.rows {
		n := row.attack.name
		if row.legit.errors > 0 {
			out = append(out, fmt.Sprintf("%s: the well-behaved client got %d errors in %d requests (first: %s)", n, row.legit.errors, row.legit.requests, row.legit.firstErr))
		}
		if row.p99Ratio > 3 {
			out = append(out, fmt.Sprintf("%s: p99 %v is %.1fx steady (target 3x)", n, row.legit.p99, row.p99Ratio))
		}
		if row.masterOver > r.budget {
			out = append(out, fmt.Sprintf("%s: master RSS rose %s over rest, more than the budget %s", n, mib(row.masterOver), mib(r.budget)))
		}
		if row.image.errors > 0 {
			out = append(out, fmt.Sprintf("%s: the image client got %d errors in %d requests (first: %s)", n, row.image.errors, row.image.requests, row.image.firstErr))
		}
		if row.imageRatio > 3 {
			out = append(out, fmt.Sprintf("%s: image p99 %v is %.1fx steady (target 3x)", n, row.image.p99, row.imageRatio))
		}
		if row.grpc.errors > 0 {
			out = append(out, fmt.Sprintf("%s: the gRPC client got %d errors in %d requests (first: %s)", n, row.grpc.errors, row.grpc.requests, row.grpc.firstErr))
		}
		if row.grpcRatio > 3 {
			out = append(out, fmt.Sprintf("%s: gRPC p99 %v is %.1fx steady (target 3x)", n, row.grpc.p99, row.grpcRatio))
		}
		if row.quick.errors > 0 {
			out = append(out, fmt.Sprintf("%s: the slow model's quick client got %d errors in %d requests (first: %s)", n, row.quick.errors, row.quick.requests, row.quick.firstErr))
		}
		if bad := unclear(row.answers, row.attack.allowed); len(bad) > 0 {
			out = append(out, fmt.Sprintf("%s: attack requests answered %v, not a 4xx, 503 or a cut", n, bad))
		}
		if !row.alive {
			out = append(out, n+": the master died")
		}
	}
	return out
}

func printReport(w io.Writer, r *report) {
	fmt.Fprintf(w, "steady: %d requests, %d errors, p99 %.2fms; image %d requests, %d errors, p99 %.2fms; gRPC %d requests, %d errors, p99 %.2fms; quick %d requests, %d errors, p99 %.2fms; rest RSS master %s, prep %s; body budget %s\n\n",
		r.steady.requests, r.steady.errors, ms(r.steady.p99), r.imageSteady.requests, r.imageSteady.errors, ms(r.imageSteady.p99),
		r.grpcSteady.requests, r.grpcSteady.errors, ms(r.grpcSteady.p99), r.quickSteady.requests, r.quickSteady.errors, ms(r.quickSteady.p99),
		mib(r.masterRest), mib(r.prepRest), mib(r.budget))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "attack\tclients\tmaster peak-rest\tmaster after\tprep peak-rest\tprep after\tlegit errors\tp99 ms\tp99/steady\timage errors\timage p99 ms\timage p99/steady\tgRPC errors\tgRPC p99 ms\tgRPC p99/steady\tquick errors\tquick p99 ms\tclient-closed\tattack answers")
	for _, row := range r.rows {
		if row.skipped != "" {
			fmt.Fprintf(tw, "%s\tskipped: %s\n", row.attack.name, row.skipped)
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%d/%d\t%.2f\t%.2f\t%d/%d\t%.2f\t%.2f\t%d/%d\t%.2f\t%.2f\t%d/%d\t%.2f\t%s\t%s\n", row.attack.name, row.clients, mib(row.masterOver), mib(row.masterAfter),
			mib(row.prepOver), mib(row.prepAfter), row.legit.errors, row.legit.requests, ms(row.legit.p99), row.p99Ratio,
			row.image.errors, row.image.requests, ms(row.image.p99), row.imageRatio,
			row.grpc.errors, row.grpc.requests, ms(row.grpc.p99), row.grpcRatio,
			row.quick.errors, row.quick.requests, ms(row.quick.p99), formatClosed(row.clientClosed), formatAnswers(row.answers))
	}
	tw.Flush()
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
