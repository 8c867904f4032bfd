package metrics

import (
	"net"
	"strconv"

	"github.com/supervisor-dev/supervisor/internal/conncap"
)

// maxConns caps the metrics listener's open connections. Scrapers and
// status pages hold a handful; without a cap, a flood of idle connections
// (each held up to the server's ReadTimeout) took every file descriptor
// of the master, and the public listener's next accept failed with
// EMFILE. One over the cap is answered 503 and closed at once.
const maxConns = 128

// busyAnswer is the whole HTTP answer to a connection over maxConns.
var busyAnswer = func() []byte {
	body := "metrics listener busy: " + strconv.Itoa(maxConns) + " connections are open; retry later\n"
	return conncap.HTTPBusy("supervisor-metrics", "text/plain; charset=utf-8", []byte(body))
}()

// capConns wraps ln in the maxConns cap. Its accepts are retried, not
// returned, when the process is out of descriptors (conncap), so that
// the listener outlives a flood.
func capConns(ln net.Listener) net.Listener {
	return conncap.New(ln, maxConns, busyAnswer)
}
