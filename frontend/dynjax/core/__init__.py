"""The tracing core: avals, jaxprs, the interpreter stack, staging and type expansion."""
