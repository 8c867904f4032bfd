package arena

// String names the state, for errors and logs.
func (s State) String() string {
	switch s {
	case Free:
		return "free"
	case Sent:
		return "sent"
	case Claimed:
		return "claimed"
	case Done:
		return "done"
	}
	return "invalid"
}
