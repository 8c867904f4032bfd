// Package deb holds the Debian package's control files (control.in,
// conffiles, postinst, prerm, postrm, copyright, lintian-overrides, the man
// page's extra sections), which scripts/build-deb (`make deb`) assembles
// with the binary, ONNX Runtime, the unit, the packaged config
// (scripts/packaged-config) and the models into
// out/deb/onnx-supervisor_<version>_amd64.deb and its -dbgsym package. It
// has no Go code: its tests build the package and check what dpkg and
// lintian will see (names that are not Debian's supervisord's, Depends
// against every library the binary and ONNX Runtime link, the conffile,
// the paths, a stripped PIE binary whose symbols are in the dbgsym
// package, md5sums, the man page, the maintainer scripts), and run postrm
// against a scratch state directory; scripts/systemd-e2e
// (`make test-systemd`) installs it under a real systemd, and
// `make deb-check` runs lintian and checks every path against Debian's
// archive (scripts/archive-names).
//
// The package is onnx-supervisor, not supervisor: that name, the unit
// supervisor.service and /etc/supervisor/ are Debian's supervisord's, and
// apt would "upgrade" our 0.0~git… versions to it. The command stays
// /usr/bin/supervisor, which no Debian package ships.
//
// The maintainer scripts follow dpkg's order on upgrade (old prerm upgrade,
// unpack, new postinst configure <old version>): prerm leaves the service
// running, and postinst hands the listeners to the new binary with
// `supervisor upgrade` instead of restarting, so that an upgrade drops no
// request. Remove stops the service and keeps /etc/onnx-supervisor and
// /var/lib/onnx-supervisor; purge deletes only what the package and its
// service created (the enable state, the engine cache, the user, the state
// directory once empty), never an operator's file.
package deb
