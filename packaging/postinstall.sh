#!/bin/sh
# After installing or upgrading the package: the daemon is a user
# service, which each user enables for themselves.
set -e
if [ -d /run/systemd/system ]; then
  echo "corral: start the daemon with your session: systemctl --user enable --now corral"
fi
exit 0
