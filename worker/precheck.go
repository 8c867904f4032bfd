package worker

// PrefixHeader marks the master's prefix check of a large infer request
// (supervisor/front precheck.go): the request carries the headers the client
// sent and, as its body, only the first bytes of the client's body; the
// header's value is the whole body's length in bytes, as declared (or,
// for a chunked body, -1: not known yet). The prep worker answers 204
// No Content when nothing in the prefix is wrong, or the 400 or 413 V2
// error it would give the whole request; nothing else it answers is a
// refusal. The master removes this header from every client request, so
// only the master can ask for a check.
const PrefixHeader = "X-Supervisor-Prefix"
