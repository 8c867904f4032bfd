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
}

// Error returns Msg, so the message a client sees is the whole story.
func (e *Error) Error() string { return e.Msg }

// badRequest builds a 400 *Error from a format string.
func badRequest(format string, args ...any) *Error {
	return &Error{Status: http.StatusBadRequest, Msg: fmt.Sprintf(format, args...)}
}
