package admission

// Refusal is the answer to a refused request: a status (0 = admitted),
// a V2 error message and at most one extra response header.
type Refusal struct {
	Status        int
	Msg           string
	Header, Value string
}
