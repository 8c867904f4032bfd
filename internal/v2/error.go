package v2

import (
	"fmt"
	"net/http"
)

// Error is a request the server refuses, with the HTTP status to answer and
// a message meant for the client: it names the input or field at fault.
type Error struct {
	Status int    // HTTP status code: 400 for a malformed or mismatched request
	Msg    string // written to the client as {"error": Msg}
	// cause is ErrTruncated when a prefix decode ran out of bytes here.
	cause error
}

// Error returns Msg, so the message a client sees is the whole story.
func (e *Error) Error() string { return e.Msg }

// Unwrap returns ErrTruncated for the end of a prefix, else nil.
func (e *Error) Unwrap() error { return e.cause }

// badRequest builds a 400 *Error from a format string.
func badRequest(format string, args ...any) *Error {
	return &Error{Status: http.StatusBadRequest, Msg: fmt.Sprintf(format, args...)}
}
