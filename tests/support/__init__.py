"""Helpers the tests share (no tests here): sheets to pay, the CLI and the sandbox as the tests
drive them, processes to kill, crafted files, the samples and the README walkthrough."""
