package nicethread

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/supervisor-dev/supervisor/internal/polltest"
)

// TestRunNicedLowersOnlyItsOwnThread: fn runs Nice nicer, on a thread
// that ends with it, so no thread of the worker is left niced for the
// scheduler to run ordinary work on.
func TestRunNicedLowersOnlyItsOwnThread(t *testing.T) {
	base := threadNice(t, unix.Gettid())
	for range 8 {
		var got int
		err := Run(func() error {
			got = threadNice(t, unix.Gettid())
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if want := min(base+Nice, 19); got != want {
			t.Fatalf("fn ran at nice %d, want %d", got, want)
		}
	}
	// A thread ends a moment after its goroutine has answered.
	polltest.Until(t, 30*time.Second, time.Millisecond, "every niced thread ends", func() bool {
		return nicedThreads(base) == 0
	})
}

// nicedThreads counts the process's threads not at nice base, but for
// the main thread: the runtime cannot end it, and parks it for ever
// instead, so it runs nothing niced either.
func nicedThreads(base int) int {
	tasks, _ := filepath.Glob("/proc/self/task/*")
	n := 0
	for _, task := range tasks {
		tid, _ := strconv.Atoi(filepath.Base(task))
		if v, ok := threadNiceOK(tid); ok && v != base && tid != os.Getpid() {
			n++
		}
	}
	return n
}

// threadNice reads a thread's nice value from /proc/self/task/TID/stat
// (field 19).
func threadNice(t *testing.T, tid int) int {
	t.Helper()
	n, ok := threadNiceOK(tid)
	if !ok {
		t.Fatalf("no nice value for thread %d", tid)
	}
	return n
}

func threadNiceOK(tid int) (int, bool) {
	b, err := os.ReadFile("/proc/self/task/" + strconv.Itoa(tid) + "/stat")
	if err != nil {
		return 0, false // the thread has ended
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:]) // fields from 3 on
	n, err := strconv.Atoi(f[19-3])
	return n, err == nil
}
