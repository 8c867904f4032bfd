package config

import (
	"fmt"
	"reflect"
	"strings"

	"gopkg.in/yaml.v3"
)

// fieldKeys is the key table of a flat section, derived from the yaml tags
// of the struct dst points to, in field order, each key decoded by its
// field's type: the struct is the one list of a section's keys, so that a
// key added to it is decoded, listed among the known keys and written by
// the effective config at once. A field whose type has no decoder here
// is a programming error (a panic, which the tests reach for every
// section that uses this).
func (d *configDecoder) fieldKeys(dst any) []configKey {
	v := reflect.ValueOf(dst).Elem()
	var keys []configKey
	for i := range v.NumField() {
		if isInline(v.Type().Field(i)) {
			keys = append(keys, d.fieldKeys(v.Field(i).Addr().Interface())...)
			continue
		}
		name := yamlKey(v.Type().Field(i))
		if name == "" {
			continue
		}
		keys = append(keys, configKey{name, d.fieldDecoder(v.Field(i).Addr().Interface(), name)})
	}
	return keys
}

// yamlKey is a struct field's YAML key ("" for one without, or "-").
func yamlKey(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	if name == "-" || name == "" || !f.IsExported() {
		return ""
	}
	return name
}

// isInline reports whether f is an embedded struct whose keys are its
// parent's (yaml ",inline").
func isInline(f reflect.StructField) bool {
	_, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	return f.Anonymous && f.Type.Kind() == reflect.Struct && opts == "inline"
}

// yamlKeys are the YAML keys of struct type t, in field order, those of
// inline structs included.
func yamlKeys(t reflect.Type) []string {
	var keys []string
	for i := range t.NumField() {
		if isInline(t.Field(i)) {
			keys = append(keys, yamlKeys(t.Field(i).Type)...)
			continue
		}
		if k := yamlKey(t.Field(i)); k != "" {
			keys = append(keys, k)
		}
	}
	return keys
}

// fieldDecoder is the decoder of one field, by its type.
func (d *configDecoder) fieldDecoder(p any, key string) func(*yaml.Node, string) {
	switch p := p.(type) {
	case *string:
		return d.str(p)
	case *int:
		return d.integer(p)
	case *bool:
		return d.boolean(p)
	case *float32:
		return d.float(p)
	case *[3]float32:
		return d.floats3(p)
	case *Duration:
		return d.duration(p)
	case *ByteSize:
		return d.byteSize(p)
	case *[]string:
		return d.strs(p)
	case *[]int:
		return d.integers(p)
	}
	if reflect.TypeOf(p).Elem().Kind() == reflect.Struct {
		// A nested section: its keys are its struct's tags, recursively.
		return func(n *yaml.Node, field string) { d.mapping(n, field, d.fieldKeys(p)) }
	}
	panic(fmt.Sprintf("config: no decoder for key %q of type %T", key, p))
}
