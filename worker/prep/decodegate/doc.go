// Package decodegate is a prep worker's decode gate: it decides when each
// image decode, each large inflated body and each large answer may hold
// memory, weighing each by the bytes it will hold, in two lanes of one
// budget (prep.max_decode_bytes): small decodes and large ones, with
// answers within the large lane's room. Gate's comment has the design.
//
// The invariants:
//
//   - What the lanes hold never exceeds the budget; each lane runs at most
//     Places decodes at once.
//   - A small decode never waits behind a large one; large decodes enter
//     strictly first come first served.
//   - A cost that could never fit is refused at once (ErrOverBudget), and
//     a wait ends when its stop check says the client has gone.
//   - An answer's reservation (ReserveAnswer) never waits.
//   - The nil *Gate admits everything and charges nothing.
package decodegate
