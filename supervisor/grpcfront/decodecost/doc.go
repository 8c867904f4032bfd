// Package decodecost weighs a ModelInferRequest's wire bytes for what
// decoding them would allocate and hold (Of), without decoding them, so
// that grpcfront's codec can refuse a message that packs small and
// decodes large (a decode bomb) before protobuf allocates it.
//
// Invariants:
//   - Of is at least what decoding the message allocates and holds
//     (grpcfront's TestDecodedCostBoundsWhatDecodingHolds measures it):
//     each element at its decoded size (one sent unpacked twice: it is
//     appended), each struct and slice header at a fixed cost, and the
//     whole message once when raw_input_contents alias it.
//   - Of allocates nothing; malformed input counts what was read before
//     it (protobuf then refuses it).
package decodecost
