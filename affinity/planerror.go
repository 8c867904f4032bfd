package affinity

// PlanError is a Request that cannot be planned, saying which part of the
// Request is at fault, so that a caller can point at its own setting for
// it (the config names the key and its line). Plan returns every failure
// as a *PlanError; errors.Is still finds ErrNoFit and ErrOverlap through
// it, and its message is the cause's.
type PlanError struct {
	// Field is the part of the Request at fault.
	Field PlanField
	// Key is the Request.CPUs key at fault when Field is FieldCPUs
	// ("master", "infer", "prep", or a worker's name).
	Key string
	// Worker and Role name the worker that did not fit when Field is
	// FieldSize ("prep-3", RolePrep).
	Worker string
	Role   Role
	// Err is the cause.
	Err error
}

// PlanField is the part of a Request a PlanError is about.
type PlanField int

const (
	// FieldHost: the topology or GPUs given, or two explicit lists that
	// overlap (ErrOverlap): no single field is at fault.
	FieldHost PlanField = iota
	// FieldCPUs: Request.CPUs[Key] is malformed, empty, names CPUs this
	// process may not use, or names a worker the plan does not have.
	FieldCPUs
	// FieldReserve: Request.Reserve CPUs were not free.
	FieldReserve
	// FieldInfer: Request.Infer is a count this host cannot run.
	FieldInfer
	// FieldSize: Worker did not fit (ErrNoFit), from its role's count or
	// CPUs per worker.
	FieldSize
)

func (e *PlanError) Error() string { return e.Err.Error() }

// Unwrap returns the cause, for errors.Is(err, ErrNoFit) and the like.
func (e *PlanError) Unwrap() error { return e.Err }

// cpusError is a fault of the Request.CPUs list under key.
func cpusError(key string, err error) *PlanError {
	return &PlanError{Field: FieldCPUs, Key: key, Err: err}
}
