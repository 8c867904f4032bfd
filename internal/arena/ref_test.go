package arena

import "testing"

// FuzzParseDescriptors: no descriptor header panics the infer side's
// parsers, and what they accept writes back the same.
func FuzzParseDescriptors(f *testing.F) {
	f.Add("123:7:9f3a", "3:41:4096")
	f.Add("-1:x:", "::")
	f.Fuzz(func(t *testing.T, ref, slot string) {
		if r, err := ParseRef(ref); err == nil {
			if back, err := ParseRef(r.String()); err != nil || back != r {
				t.Fatalf("ref %q -> %+v -> %q -> %+v, %v", ref, r, r.String(), back, err)
			}
		}
		if tk, n, err := ParseSlotDescriptor(slot); err == nil {
			if tk.Slot < 0 || n < 0 {
				t.Fatalf("slot %q accepted as %+v, %d", slot, tk, n)
			}
			if back, m, err := ParseSlotDescriptor(SlotDescriptor(tk, n)); err != nil || back != tk || m != n {
				t.Fatalf("slot %q -> %+v %d -> %+v %d, %v", slot, tk, n, back, m, err)
			}
		}
	})
}
