//! The sandbox from the outside, with the real /usr/bin/python3: the script contract, one
//! test per attack, and the slots.

mod attacks;
mod contract;
mod slots;
mod support;
