// Package phase is where the master is in its life (starting, serving,
// upgrading, lame duck, draining, handed over, stopped) and the one table
// of the moves between those phases. The master holds one State and asks
// the phase it is in what it may do (Ready, Stopping, AcceptsChanges,
// MayStopSockets); it moves only by State.Move with a step (ToServing,
// ToDraining, ...).
//
// The invariants:
//
//   - A move is atomic: State.Move reads the phase, takes the step and
//     stores the result under one lock, so a stop and an upgrade racing
//     see each other (TestStopAndUpgradeRace).
//   - Only the moves the transitions table lists happen; any other is
//     refused with an error that names both phases, and the phase stays.
//   - HandedOver and Stopped are terminal.
//   - A phase that hands the listening sockets over (the upgrading
//     phases, HandedOver) never lets a stop shut them down.
package phase
