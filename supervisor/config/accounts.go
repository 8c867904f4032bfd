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
			return nil, fmt.Errorf("user %q does not exist", userName)
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
		return 0, fmt.Errorf("group %q does not exist", g)
	}
	return strconv.Atoi(grp.Gid)
}
