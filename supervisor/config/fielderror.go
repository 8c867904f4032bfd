package config

// configError is err as a *ConfigError at field's line.
func (c *Config) configError(field string, err error) error {
	return &ConfigError{Source: c.origin.source, Line: c.origin.line(field), Field: field, Problem: err.Error(), Err: err}
}

// FieldError is err as a *ConfigError at field's line in c's file, for
// the checks outside this package (supervisor/config/plan).
func (c *Config) FieldError(field string, err error) error { return c.configError(field, err) }

// JoinByLine joins errs in the order of their lines in the file, as
// ParseConfig reports them.
func JoinByLine(errs []error) error { return joinSorted(errs) }
