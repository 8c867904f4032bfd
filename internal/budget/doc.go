// Package budget is the one way this server accounts for the memory a
// request holds: a body, a decode, an answer. A caller reserves bytes in
// a lane and gets a Charge; the Charge grows as the work learns what it
// really holds (and shrinks as it drops part of it), and is released
// once, whoever releases it. Reserve and
// Grow never wait: they refuse (ErrBusy, or a *TooLargeError for what
// could never fit). Wait waits its turn, first come first served in its
// lane, until the bytes fit, its context ends or its caller's client is
// gone.
//
// The vocabulary, used the same way by every user:
//
//   - room: the bytes a lane's charges may hold together.
//   - places: how many charges a lane holds at once (decode threads),
//     whatever their bytes; a lane without places bounds bytes only.
//   - lane: a kind of charge (small decodes, large decodes, answers,
//     small bodies, large bodies) with its room and places. A lane may
//     be Within another, sharing its room: a charge must fit its own
//     lane and every lane it is within.
//   - charge: the bytes (and place) one piece of work holds in a lane.
//
// Invariants, whatever the order of calls and goroutines:
//
//   - a lane's bytes never exceed its room (unless SetRoom made it
//     smaller than they were), nor its charges its places;
//   - every byte reserved is given back by the charge's Release, which
//     may be called any number of times, from any goroutine; once
//     released a charge holds nothing and grows no more;
//   - a new charge never overtakes one waiting in its lane or in a lane
//     it is within; waiters of a lane enter in the order they came;
//   - the first waiter of a Heir lane is not overtaken by charges of the
//     lanes beside it either, for the room it lacks up to its lane's;
//   - a wait that ends without entering holds nothing, even when it was
//     let in as it gave up;
//   - sizes saturate: a huge or negative request is refused or counted
//     as nothing, never wrapped.
package budget
