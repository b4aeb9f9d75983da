#!/bin/bash
# A job whose script states no resources: the command line says it all.
hostname
