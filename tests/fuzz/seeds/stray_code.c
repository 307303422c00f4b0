int x = 1;
#section support_code
int y;
