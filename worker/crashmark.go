package worker

// InferExitedHeader marks a prep worker's answer to a request whose infer
// worker exited (crashed, or was killed) while it held the request: 502,
// "the inference worker serving model X exited during this request". Its
// value is the infer worker's socket, which the master matches to the
// worker's exit: whether it crashed, and whether it was at work on the
// request then (TokenHeader), decide whether the request's body is struck
// towards its poison quarantine (internal/poison), or the request sent
// again. The master removes it before the client sees the answer.
const InferExitedHeader = "X-Supervisor-Infer-Exited"

// RunTimeoutHeader marks an infer worker's answer to a request whose model
// run outlived its max_run_time and was stopped (500). Its value is the
// model's name. The prep worker passes it on; the master counts the run
// timeout by model and counts the request's body towards its poison
// quarantine, as for a crash, then removes it before the client sees the
// answer.
const RunTimeoutHeader = "X-Supervisor-Run-Timeout"
