#!/bin/sh
echo "TODO"
