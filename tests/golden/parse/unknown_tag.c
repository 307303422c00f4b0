#section support_code
int helper(void) { return 0; }

#section suport_code_apply
int APPLY_SPECIFIC(f)(void) { return 1; }
