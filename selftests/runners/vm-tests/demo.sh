#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The 'make run' demo as a test, so that a broken 'make run' fails 'make
# check': the demo checks every step it shows, and when one fails its
# last line says which and why.  Exit 0 pass, 1 fail.
exec "$TOP/selftests/runners/demo.sh"
