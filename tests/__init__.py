"""The tests of batchpay, laid out like the package: sheet/, provider/, engine/, sandbox/ and
cli/ test those parts; the tests here test the product as a whole; support/ holds helpers."""
