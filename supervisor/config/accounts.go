package config

import (
	"errors"
	"fmt"
	"os/user"
	"strconv"
)

// Credentials are the user and group ids workers.user and workers.group
// name. Validation resolves them (a config naming an unknown user is
// invalid); the master resolves them again when it starts workers.
type Credentials struct {
	UID, GID int
}

// AccountError is a user or group name (or id) that this host does not
// know: workers.user, workers.group or control_group. Group says which
// kind, so a caller can tell which key to blame without reading the
// message.
type AccountError struct {
	Group bool   // a group, else a user
	Name  string // as written in the config
}

func (e *AccountError) Error() string {
	kind := "user"
	if e.Group {
		kind = "group"
	}
	return fmt.Sprintf("%s %q does not exist", kind, e.Name)
}

// LookupCredentials resolves workers.user and workers.group: names or ids;
// a user without a group runs in the user's primary group.
func LookupCredentials(userName, groupName string) (*Credentials, error) {
	if userName == "" && groupName == "" {
		return nil, nil
	}
	if userName == "" {
		return nil, errors.New("a group needs a user (set workers.user too)")
	}
	u, err := user.Lookup(userName)
	if err != nil {
		if u, err = user.LookupId(userName); err != nil {
			return nil, &AccountError{Name: userName}
		}
	}
	c := &Credentials{}
	c.UID, _ = strconv.Atoi(u.Uid)
	c.GID, _ = strconv.Atoi(u.Gid)
	if groupName != "" {
		if c.GID, err = LookupGroup(groupName); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// LookupGroup resolves a group name or numeric id to a gid.
func LookupGroup(g string) (int, error) {
	grp, err := user.LookupGroup(g)
	if err != nil {
		grp, err = user.LookupGroupId(g)
	}
	if err != nil {
		return 0, &AccountError{Group: true, Name: g}
	}
	return strconv.Atoi(grp.Gid)
}
