#section support_code
int a;
  #section code
#section	code_cleanup
# section init_code
#section code 
#Section code
#section code_clean
