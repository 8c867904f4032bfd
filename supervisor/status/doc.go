// Package status turns what the master knows (control.Status) and what its
// scoreboard counts (shm) into what operators read: the Report (`supervisor
// status`, its text and --json, /status.json), the self-contained /status
// page, and the Prometheus text of /metrics (Triton's nv_* series and
// supervisor_*). Reader builds a Report from outside the master, over the
// control socket and the board; the master builds its own (OfMaster,
// Scrape) and serves them on its metrics listener, which stays in
// supervisor/ with the master's lifecycle.
//
// Invariants:
//   - Rendering only reads: nothing here writes the board or asks the
//     master to change anything, and nothing on the inference path waits
//     for it.
//   - The board may be truncated under its mapping at any time: Reader
//     reads it only under shm.Guard, and a fault yields a report from the
//     control socket alone (Source says which parts answered), never a
//     crash.
//   - Counters never go back: Totals sum the retired processes' counters
//     (kept by the master's board) with the live records', so a recycle or
//     a restart does not reset a /metrics counter.
//   - Everything a client or worker can influence (model names, reasons,
//     listen addresses) is escaped where it is written: html/template on
//     the page, label escaping in the Prometheus text, and in the text of
//     `supervisor status` every control character (escape sequences a
//     compromised worker wrote to its slot, newlines) as \xNN or \uNNNN
//     (printable, escape.go).
//   - The page references nothing outside itself (no scripts, styles or
//     fonts from elsewhere), so it works on an air-gapped host.
package status
