package worker

// InferExitedHeader marks a prep worker's answer to a request whose infer
// worker exited (crashed, or was killed) while it held the request: 502,
// "the inference worker serving model X exited during this request". Its
// value is the model's name. The master reads it to count the request's
// body towards its poison quarantine (internal/poison) and removes it
// before the client sees the answer.
const InferExitedHeader = "X-Supervisor-Infer-Exited"
