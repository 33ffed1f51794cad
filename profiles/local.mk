# SPDX-License-Identifier: Apache-2.0
profilesdir = $(pkgdatadir)/profiles
dist_profiles_DATA = \
	profiles/default.ini \
	profiles/shell.ini \
	profiles/python.ini \
	profiles/node.ini
