#section support_code
// Café: a non-ASCII comment, so SARIF code-point columns differ from byte columns.
int helper(void) { return APPLY_SPECIFIC(x); }
#section suport_code_apply
#section support_code_apply
/* é */ int counter = 0;
#section code
/* section-lint: ignore
   SL501 */
if (!INPUT_0) return 1;
#section code
#section code_cleanup
Py_XDECREF(OUTPUT_0); // section-lint: ignore[SL302]
