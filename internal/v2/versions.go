package v2

import (
	"strconv"
	"strings"
)

// Model versions. A model of the config file either has one file (its
// path:), served as version "1", or a list of versions, each its own
// file; every version served is its own model to the workers, under its
// served name "name@version" ('@' is not allowed in a model name, so no
// configured model is ever called like a version). The infer workers, the
// response cache, the poison quarantine and the statistics know a version
// by that name alone; only the routes (the name and /versions/{v} of the
// path) and the answers (model_name, model_version) split it again.

// versionSep separates a model's name from its version in a served name.
const versionSep = "@"

// ServedName is the name the workers serve version of model under;
// version "" is the model's only file (version 1).
func ServedName(model, version string) string {
	if version == "" {
		return model
	}
	return model + versionSep + version
}

// SplitServedName is the model name and version of a served name: the
// version after the last '@', or "1" for a model of one file.
func SplitServedName(served string) (model, version string) {
	if i := strings.LastIndex(served, versionSep); i >= 0 {
		return served[:i], served[i+1:]
	}
	return served, modelVersion
}

// IsVersioned reports whether served names a version of a model with a
// versions list (rather than a model of one file).
func IsVersioned(served string) bool { return strings.Contains(served, versionSep) }

// CompareVersions orders version strings as numbers (Triton's versions are
// positive integers): -1, 0 or 1; a string that is not a number sorts
// before every number, then by its text.
func CompareVersions(a, b string) int {
	na, ea := strconv.ParseInt(a, 10, 64)
	nb, eb := strconv.ParseInt(b, 10, 64)
	switch {
	case ea == nil && eb == nil:
		return cmpInt(na, nb)
	case ea != nil && eb == nil:
		return -1
	case ea == nil && eb != nil:
		return 1
	}
	return strings.Compare(a, b)
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
