package status

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The text report prints strings that other processes wrote: worker
// names, devices, states and reasons from the scoreboard, which every
// worker maps writable, and model names and errors from the master. A
// compromised worker could write escape sequences there that the
// operator's terminal would run (retitle it, rewrite what is on screen,
// on some terminals answer back with input). So every string goes
// through printable on its way to the text (printf); `status --json` is
// escaped by JSON, /status by html/template.

// printable is s with what a terminal would act on escaped, as
// strconv.Quote writes it but without the quotes: control characters
// (C0, DEL and C1, newline and tab included) and bytes that are not
// UTF-8 become \xNN (ASCII and invalid bytes) or \uNNNN, as does any
// other rune Go does not deem printable (bidirectional overrides, say).
func printable(s string) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || !strconv.IsPrint(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r < utf8.RuneSelf && !strconv.IsPrint(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case !strconv.IsPrint(r):
			// A quoted rune ('\u009b') less its quotes.
			q := strconv.QuoteRuneToASCII(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// printf is fmt.Fprintf with every string argument made printable: the
// text report's only way to write what it did not write itself.
func printf(w io.Writer, format string, args ...any) {
	for i, a := range args {
		if s, ok := a.(string); ok {
			args[i] = printable(s)
		}
	}
	fmt.Fprintf(w, format, args...)
}
