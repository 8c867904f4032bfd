// Package deb holds the Debian package's control files (control.in,
// conffiles, postinst, prerm, postrm), which scripts/build-deb (`make deb`)
// assembles with the binary, ONNX Runtime, the unit, the packaged config and
// the models into out/deb/supervisor_<version>_amd64.deb. It has no Go code:
// its tests build the package and check what dpkg will see (Depends against
// every library the binary and ONNX Runtime link, the conffile, the paths,
// the maintainer scripts), and scripts/systemd-e2e (`make test-systemd`)
// installs it under a real systemd.
//
// The maintainer scripts follow dpkg's order on upgrade (old prerm upgrade,
// unpack, new postinst configure <old version>): prerm leaves the service
// running, and postinst hands the listeners to the new binary with
// `supervisor upgrade` instead of restarting, so that an upgrade drops no
// request. Remove stops the service and keeps /etc/supervisor and
// /var/lib/supervisor; purge deletes them and the workers' user.
package deb
