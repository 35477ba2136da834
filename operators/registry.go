package operators

// registry lists every operator; each file of an operator adds its value here.
var registry = []Operator{}
