#section support_code_apply

int APPLY_SPECIFIC(broken)(PyArrayObject* x, PyArrayObject** z)
{
    return undeclared_identifier_in_broken_c;
}
