#section support_code_apply
int APPLY_SPECIFIC(f)(PyArrayObject* x, PyArrayObject** z) { return 0; }
