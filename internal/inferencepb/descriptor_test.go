package inferencepb

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bufbuild/protocompile"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// referenceDir is Triton's grpc_service.proto, kept outside the
// repository (../shared relative to its root).
var referenceDir = filepath.Join("..", "..", "..", "shared", "proto", "triton")

// compile parses .proto files from dir with a pure-Go compiler, so the
// check runs wherever Go does, without protoc.
func compile(t *testing.T, acc func(string) (string, error), files ...string) []protoreflect.FileDescriptor {
	t.Helper()
	c := protocompile.Compiler{Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{
		Accessor: func(path string) (io.ReadCloser, error) {
			s, err := acc(path)
			if err != nil {
				return nil, err
			}
			return io.NopCloser(strings.NewReader(s)), nil
		},
	})}
	fds, err := c.Compile(context.Background(), files...)
	if err != nil {
		t.Fatalf("compile %v: %v", files, err)
	}
	out := make([]protoreflect.FileDescriptor, len(fds))
	for i, fd := range fds {
		out[i] = fd
	}
	return out
}

func readFrom(dir string) func(string) (string, error) {
	return func(path string) (string, error) {
		b, err := os.ReadFile(filepath.Join(dir, path))
		return string(b), err
	}
}

// reference compiles Triton's file name (grpc_service.proto or
// model_config.proto) from referenceDir.
func reference(t *testing.T, name string) protoreflect.FileDescriptor {
	t.Helper()
	if _, err := os.Stat(filepath.Join(referenceDir, name)); err != nil {
		t.Skipf("Triton's reference protos are not at %s (../shared/proto/triton next to the repository): %v", referenceDir, err)
	}
	return compile(t, readFrom(referenceDir), name)[0]
}

// TestDescriptorMatchesTriton: every message, field, enum value and RPC we
// define, in both files, has the reference's name, number, type and label.
func TestDescriptorMatchesTriton(t *testing.T) {
	for _, ours := range []protoreflect.FileDescriptor{File_grpc_service_proto, File_model_config_proto} {
		ref := reference(t, ours.Path())
		if ours.Package() != "inference" {
			t.Fatalf("%s: package %q, want inference", ours.Path(), ours.Package())
		}
		if diffs := compareFiles(ours, ref); len(diffs) > 0 {
			t.Fatalf("our %s departs from Triton's (%s):\n%s", ours.Path(), referenceDir, strings.Join(diffs, "\n"))
		}
	}
	svc := File_grpc_service_proto.Services().Get(0)
	if File_grpc_service_proto.Messages().Len() < 20 || svc.Methods().Len() < 11 || File_model_config_proto.Enums().Len() < 1 {
		t.Fatalf("the check saw only %d messages and %d RPCs", File_grpc_service_proto.Messages().Len(), svc.Methods().Len())
	}
}

// TestDescriptorCheckFindsDifferences: the comparison does report a
// renumbered field, a changed type, a changed label, a missing RPC and a
// stream flag, so that a pass above means something.
func TestDescriptorCheckFindsDifferences(t *testing.T) {
	ref := reference(t, "grpc_service.proto")
	bad := `syntax = "proto3";
package inference;
service GRPCInferenceService {
  rpc ServerLive(ServerLiveRequest) returns (ServerLiveResponse) {}
  rpc ModelInfer(stream ServerLiveRequest) returns (ServerLiveResponse) {}
  rpc Extra(ServerLiveRequest) returns (ServerLiveResponse) {}
}
message ServerLiveRequest {}
message ServerLiveResponse { int32 live = 1; }
message ModelReadyRequest { string name = 3; repeated string version = 2; }
message Unknown {}
message ModelMetadataResponse { enum Bad { ZERO = 0; } }
enum DataType { TYPE_INVALID = 0; TYPE_BOOL = 2; }
`
	fd := compile(t, func(path string) (string, error) {
		if path != "bad.proto" {
			return "", os.ErrNotExist
		}
		return bad, nil
	}, "bad.proto")[0]
	diffs := strings.Join(compareFiles(fd, ref), "\n")
	for _, want := range []string{
		"inference.ServerLiveResponse.live: type int32",
		"inference.ModelReadyRequest.name: number 3",
		"inference.ModelReadyRequest.version: label repeated",
		"inference.Unknown: no such message",
		"GRPCInferenceService.Extra: no such RPC",
		"GRPCInferenceService.ModelInfer: input",
		"GRPCInferenceService.ModelInfer: client streaming true",
		"inference.ModelMetadataResponse.Bad: no such enum",
		"inference.DataType.TYPE_BOOL: number 2",
	} {
		if !strings.Contains(diffs, want) {
			t.Errorf("the comparison did not report %q; it said:\n%s", want, diffs)
		}
	}
}

// compareFiles lists how ours departs from ref: each of our messages
// (nested ones included) and RPCs must exist in ref with the same shape.
func compareFiles(ours, ref protoreflect.FileDescriptor) []string {
	var diffs []string
	if ours.Package() != ref.Package() {
		diffs = append(diffs, fmt.Sprintf("package %q, reference %q", ours.Package(), ref.Package()))
	}
	diffs = append(diffs, compareMessages(ours.Messages(), ref)...)
	diffs = append(diffs, compareEnums(ours.Enums(), ref)...)
	for i := 0; i < ours.Services().Len(); i++ {
		s := ours.Services().Get(i)
		rs := ref.Services().ByName(s.Name())
		if rs == nil {
			diffs = append(diffs, fmt.Sprintf("%s: no such service", s.FullName()))
			continue
		}
		for j := 0; j < s.Methods().Len(); j++ {
			diffs = append(diffs, compareMethod(s.Methods().Get(j), rs)...)
		}
	}
	return diffs
}

func compareMessages(ms protoreflect.MessageDescriptors, ref protoreflect.FileDescriptor) []string {
	var diffs []string
	for i := 0; i < ms.Len(); i++ {
		m := ms.Get(i)
		d, err := findMessage(ref, m.FullName())
		if err != nil {
			diffs = append(diffs, err.Error())
			continue
		}
		for j := 0; j < m.Fields().Len(); j++ {
			diffs = append(diffs, compareField(m.Fields().Get(j), d)...)
		}
		if !m.IsMapEntry() {
			diffs = append(diffs, compareMessages(m.Messages(), ref)...)
			diffs = append(diffs, compareEnums(m.Enums(), ref)...)
		}
	}
	return diffs
}

// compareEnums checks that each enum of es exists in ref (the reference
// file and the files it imports) with every value's name and number.
func compareEnums(es protoreflect.EnumDescriptors, ref protoreflect.FileDescriptor) []string {
	var diffs []string
	for i := 0; i < es.Len(); i++ {
		e := es.Get(i)
		re := findEnum(ref, e.FullName())
		if re == nil {
			diffs = append(diffs, fmt.Sprintf("%s: no such enum in the reference", e.FullName()))
			continue
		}
		for j := 0; j < e.Values().Len(); j++ {
			v := e.Values().Get(j)
			rv := re.Values().ByName(v.Name())
			if rv == nil || rv.Number() != v.Number() {
				diffs = append(diffs, fmt.Sprintf("%s.%s: number %d, not the reference's", e.FullName(), v.Name(), v.Number()))
			}
		}
	}
	return diffs
}

// findEnum finds a top-level enum of ref or of a file it imports, or one
// nested in a message of ref.
func findEnum(ref protoreflect.FileDescriptor, name protoreflect.FullName) protoreflect.EnumDescriptor {
	if e := ref.Enums().ByName(name.Name()); e != nil && e.FullName() == name {
		return e
	}
	if m, err := findMessage(ref, name.Parent()); err == nil {
		return m.Enums().ByName(name.Name())
	}
	for i := 0; i < ref.Imports().Len(); i++ {
		if e := findEnum(ref.Imports().Get(i).FileDescriptor, name); e != nil {
			return e
		}
	}
	return nil
}

// findMessage finds a (possibly nested) message of ref by full name.
func findMessage(ref protoreflect.FileDescriptor, name protoreflect.FullName) (protoreflect.MessageDescriptor, error) {
	rel := strings.TrimPrefix(string(name), string(ref.Package())+".")
	parts := strings.Split(rel, ".")
	d := ref.Messages().ByName(protoreflect.Name(parts[0]))
	for _, p := range parts[1:] {
		if d == nil {
			break
		}
		d = d.Messages().ByName(protoreflect.Name(p))
	}
	if d == nil {
		return nil, fmt.Errorf("%s: no such message in the reference", name)
	}
	return d, nil
}

func compareField(f protoreflect.FieldDescriptor, ref protoreflect.MessageDescriptor) []string {
	rf := ref.Fields().ByName(f.Name())
	if rf == nil {
		return []string{fmt.Sprintf("%s: no such field in the reference", f.FullName())}
	}
	var diffs []string
	add := func(what string, got, want any) {
		if got != want {
			diffs = append(diffs, fmt.Sprintf("%s: %s %v, reference %v", f.FullName(), what, got, want))
		}
	}
	add("number", f.Number(), rf.Number())
	add("type", f.Kind(), rf.Kind())
	add("label", f.Cardinality(), rf.Cardinality())
	add("map", f.IsMap(), rf.IsMap())
	add("type name", typeName(f), typeName(rf))
	add("oneof", oneofName(f), oneofName(rf))
	add("packed", f.IsPacked(), rf.IsPacked())
	return diffs
}

func typeName(f protoreflect.FieldDescriptor) protoreflect.FullName {
	switch {
	case f.Message() != nil:
		return f.Message().FullName()
	case f.Enum() != nil:
		return f.Enum().FullName()
	}
	return ""
}

func oneofName(f protoreflect.FieldDescriptor) protoreflect.Name {
	if o := f.ContainingOneof(); o != nil && !o.IsSynthetic() {
		return o.Name()
	}
	return ""
}

func compareMethod(m protoreflect.MethodDescriptor, ref protoreflect.ServiceDescriptor) []string {
	rm := ref.Methods().ByName(m.Name())
	if rm == nil {
		return []string{fmt.Sprintf("%s.%s: no such RPC in the reference", ref.Name(), m.Name())}
	}
	var diffs []string
	add := func(what string, got, want any) {
		if got != want {
			diffs = append(diffs, fmt.Sprintf("%s.%s: %s %v, reference %v", ref.Name(), m.Name(), what, got, want))
		}
	}
	add("input", m.Input().FullName(), rm.Input().FullName())
	add("output", m.Output().FullName(), rm.Output().FullName())
	add("client streaming", m.IsStreamingClient(), rm.IsStreamingClient())
	add("server streaming", m.IsStreamingServer(), rm.IsStreamingServer())
	return diffs
}
