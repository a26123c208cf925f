/** A valid create_company_address body: tests that need an address vary only its alias. */
export const officeAddress = (alias: string) => ({
  alias,
  address: '1 Test St',
  city: 'Berlin',
  zipCode: '10115',
  country: 'DE',
  contactName: 'Tess Test',
  contactEmail: 'tess@acme.example',
  phone: '+49 30 5550 199',
});
