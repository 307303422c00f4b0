#section code
int café = 1;
