package supervisor

// Version is the supervisor's version, reported by /v2 and `supervisor
// version`. Set at build time with -ldflags "-X ...supervisor.Version=...".
var Version = "dev"
